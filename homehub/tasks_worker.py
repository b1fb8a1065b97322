"""The tasks worker: runs the hub's long work (settings.TASKS, Django's Tasks framework through
the django-tasks backport) and resumes the work of workers that died.

It is the configured backend's own worker plus the one thing that worker lacks: a task whose
process dies stays claimed for ever. With TASKS_BACKEND=database, the database backend's worker
(`django_tasks_db`, as its `db_worker` command runs it); with TASKS_BACKEND=rq, RQ's worker
(as django-rq's `rqworker --job-class django_tasks_rq.Job` runs it), without forking: each task
runs in the worker's own process, as with the database backend, so that a worker that dies
takes its task with it and nothing goes on behind its back. Beside it, at start and every
third of TASKS_LEASE_SECONDS, `fel.batch_jobs.resume_abandoned` hands a batch whose task
stopped beating to a new task. `serve` runs one in threads of its process (unless
TASKS_IN_PROCESS=0); `manage.py tasks_worker` runs one on its own. Several may run over one
queue: each task is claimed by one of them.
"""

from __future__ import annotations

import logging
import threading
from typing import Protocol

from django.conf import settings
from django.db import DatabaseError, connections
from django.utils.crypto import get_random_string
from django_rq.queues import get_queues
from django_tasks_db.management.commands.db_worker import Worker
from django_tasks_rq import Job
from redis import RedisError
from rq import SimpleWorker
from rq.timeouts import TimerDeathPenalty

from fel.batch_jobs import resume_abandoned

logger = logging.getLogger(__name__)


class _Backend(Protocol):
    """The configured backend's worker loop."""

    def run(self) -> None:
        """Run tasks in this, the main, thread until a signal (SIGTERM, Ctrl-C) stops it."""

    def run_in_thread(self, stopped: threading.Event) -> None:
        """Run tasks in this thread (no signals there) until `stopped` is set."""

    def stop(self) -> None:
        """Take no further task; the one running goes on to its end."""


class TasksWorker:
    def __init__(self, *, worker_id: str = "", interval: float = 1.0) -> None:
        self.worker_id = worker_id or get_random_string(32)
        self.backend: _Backend = (
            _RQWorker(self.worker_id, interval)
            if settings.TASKS_BACKEND == "rq"
            else _DatabaseWorker(self.worker_id, interval)
        )
        self.stopped = threading.Event()

    def start(self) -> None:
        """Run the worker and the recovery in daemon threads (a task still running when the
        process ends is resumed by a worker later, as after a crash)."""
        threading.Thread(target=self._run_tasks, name="tasks-worker", daemon=True).start()
        self.start_recovery()

    def start_recovery(self) -> None:
        threading.Thread(target=self._recover, name="tasks-recovery", daemon=True).start()

    def run(self) -> None:
        """Run tasks in the main thread until a signal: SIGTERM lets the task running finish, a
        second one ends it (to be resumed)."""
        try:
            self.backend.run()
        finally:
            self.stop()

    def stop(self) -> None:
        """Take no further task; the one running goes on to its end."""
        self.stopped.set()
        self.backend.stop()

    def _run_tasks(self) -> None:
        """The backend's worker loop, started again after a database or Redis error."""
        try:
            while not self.stopped.is_set():
                try:
                    self.backend.run_in_thread(self.stopped)
                    return
                except (DatabaseError, RedisError):
                    logger.warning("tasks worker: queue unreachable; retrying", exc_info=True)
                    self.stopped.wait(5)
        finally:
            connections.close_all()  # this thread's own connections

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


class _DatabaseWorker:
    def __init__(self, worker_id: str, interval: float) -> None:
        self.worker = Worker(
            queue_names=["*"],
            interval=interval,
            batch=False,
            backend_name="default",
            startup_delay=False,
            max_tasks=None,
            worker_id=worker_id,
            excluded_queue_names=[],
        )

    def run(self) -> None:
        self.worker.configure_signals()
        self.worker.run()

    def run_in_thread(self, stopped: threading.Event) -> None:
        self.worker.run()

    def stop(self) -> None:
        self.worker.running = False


class _UnforkedRQWorker(SimpleWorker):
    """RQ's worker that runs each task in its own process (no fork), in any thread: RQ's default
    time limits set SIGALRM, which only the main thread may, a timer instead (no task has a time
    limit, settings.RQ_QUEUES; this only bounds RQ's own waits)."""

    death_penalty_class = TimerDeathPenalty


class _RQWorker:
    def __init__(self, worker_id: str, interval: float) -> None:
        self.worker_id = worker_id
        self.wait = max(1, round(interval))  # RQ waits on Redis in whole seconds

    def _worker(self) -> _UnforkedRQWorker:
        """A new RQ worker (its making asks Redis, so it is made when it runs)."""
        queues = get_queues(*sorted(settings.TASKS["default"]["QUEUES"]), job_class=Job)
        return _UnforkedRQWorker(queues, connection=queues[0].connection, job_class=Job, name=self.worker_id)

    def run(self) -> None:
        connections.close_all()  # none opened here is kept across tasks
        self._worker().work(with_scheduler=False)

    def run_in_thread(self, stopped: threading.Event) -> None:
        """RQ's work loop, but for its signal handlers: take a task, run it, until stopped."""
        worker = self._worker()
        worker.bootstrap()
        try:
            while not stopped.is_set():
                taken = worker.dequeue_job_and_maintain_ttl(self.wait, max_idle_time=self.wait)  # None: idle
                if taken is not None:
                    worker.execute_job(*taken)
        finally:
            worker.teardown()

    def stop(self) -> None:
        """`run` stops on its signal; `run_in_thread` at its next look at the queue."""
