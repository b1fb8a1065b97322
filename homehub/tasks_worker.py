"""The tasks worker: runs the hub's long work (settings.TASKS, Django's Tasks framework through
the django-tasks backport) and resumes the work of workers that died.

It is the database backend's own worker (`django_tasks_db`, as its `db_worker` command runs
it) plus the one thing that worker lacks: a task it claimed stays RUNNING for ever when its
process dies. So beside it, at start and every third of TASKS_LEASE_SECONDS,
`fel.batch_jobs.resume_abandoned` hands a batch whose task stopped beating to a new task. `serve`
runs one in threads of its process (unless TASKS_IN_PROCESS=0); `manage.py tasks_worker` runs
one on its own. Several may run over one database: each task is claimed by one of them.
"""

from __future__ import annotations

import logging
import threading

from django.conf import settings
from django.db import DatabaseError, connections
from django.utils.crypto import get_random_string
from django_tasks_db.management.commands.db_worker import Worker

from fel.batch_jobs import resume_abandoned

logger = logging.getLogger(__name__)


class TasksWorker:
    def __init__(self, *, worker_id: str = "", interval: float = 1.0) -> None:
        self.worker_id = worker_id or get_random_string(32)
        self.worker = Worker(
            queue_names=["*"],
            interval=interval,
            batch=False,
            backend_name="default",
            startup_delay=False,
            max_tasks=None,
            worker_id=self.worker_id,
            excluded_queue_names=[],
        )
        self.stopped = threading.Event()

    def start(self) -> None:
        """Run the worker and the recovery in daemon threads (a task still running when the
        process ends is resumed by a worker later, as after a crash)."""
        threading.Thread(target=self.run_tasks, name="tasks-worker", daemon=True).start()
        self.start_recovery()

    def start_recovery(self) -> None:
        threading.Thread(target=self._recover, name="tasks-recovery", daemon=True).start()

    def run_tasks(self) -> None:
        """The backport's worker loop, started again after a database error."""
        try:
            while not self.stopped.is_set():
                try:
                    self.worker.run()
                    return
                except DatabaseError:
                    logger.warning("tasks worker: database error; retrying", exc_info=True)
                    self.stopped.wait(5)
        finally:
            connections.close_all()  # this thread's own connections

    def stop(self) -> None:
        """Take no further task; the one running goes on to its end."""
        self.worker.running = False
        self.stopped.set()

    def _recover(self) -> None:
        try:
            while True:
                try:
                    resume_abandoned()
                except DatabaseError:
                    logger.warning("tasks worker: could not look for abandoned work", exc_info=True)
                if self.stopped.wait(settings.TASKS_LEASE_SECONDS / 3):
                    return
        finally:
            connections.close_all()
