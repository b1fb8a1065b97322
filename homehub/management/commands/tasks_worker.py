from argparse import ArgumentParser

from django.conf import settings
from django.core.management.base import BaseCommand

from homehub.tasks_worker import TasksWorker


class Command(BaseCommand):
    help = (
        "Run the hub's long work (FEL batches, as tasks of Django's Tasks framework), as `serve` "
        "does in its own process unless TASKS_IN_PROCESS=0: the worker of the configured "
        "backend (TASKS_BACKEND: the database's, as `db_worker`, or RQ's, as `rqworker`) plus "
        "the resumption of batches whose worker died. Runs until stopped (SIGTERM lets the task "
        "running finish; a second one ends it, to be resumed); several may run: each task is "
        "claimed by one of them."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--worker-id", default="", help="unique among the workers (default: random)")
        parser.add_argument(
            "--interval", type=float, default=1.0, help="seconds between looks at an empty queue"
        )

    def handle(self, *args: object, worker_id: str, interval: float, **options: object) -> None:
        tasks = TasksWorker(worker_id=worker_id, interval=interval)
        self.stderr.write(
            f"Tasks worker {tasks.worker_id} ({settings.TASKS_BACKEND} queue): running tasks; Ctrl-C to stop."
        )
        tasks.start_recovery()
        tasks.run()
