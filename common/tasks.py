"""Background work on the event loop, and how async code calls sync code.

Background tasks: asyncio keeps only weak references to tasks, so a task nobody holds may be
collected mid-flight, and an exception nobody awaits surfaces, if ever, as "Task exception
was never retrieved" when it is. `spawn` (work that must outlive whoever started it: a
device's answer owed to a caller after its socket closed) and a `Tasks` set (work that ends
with its owner: a link's discovery, a worker's loops) hold each task until it ends and log
what it raised.

Sync code from async code, one rule for the hub's own event loops:

- the database: `asgiref.sync.sync_to_async` with its default `thread_sensitive=True` (the
  ORM then runs in Django's one database thread, as in a request), and for writes made on
  the hot paths of transports and workers `common.write_batches.batched`, which shares that
  thread's hops among the writes made at the same time;
- anything else that blocks (joining a thread, paho's waits, closing a socket):
  `sync_to_async(..., thread_sensitive=False)`, a thread of its own, so that it never waits
  behind the database thread nor holds it.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

logger = logging.getLogger(__name__)

T = TypeVar("T")


class Tasks:
    """A set of background tasks that end with their owner (`cancel`)."""

    def __init__(self, owner: str) -> None:
        self.owner = owner  # named in the log when one of them fails
        self._tasks: set[asyncio.Future[Any]] = set()

    def spawn(self, work: Awaitable[T]) -> asyncio.Future[T]:
        """Run `work` (a coroutine, or a task already started) in the background."""
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._ended)
        return task

    def _ended(self, task: asyncio.Future[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and (error := task.exception()) is not None:
            logger.error("%s: a background task failed", self.owner, exc_info=error)

    def cancel(self) -> None:
        """Cancel them all; called from one of them, that one goes on to its end."""
        current = asyncio.current_task()
        for task in list(self._tasks):
            if task is not current:
                task.cancel()


class StartOnce:
    """An async `start` run once per event loop, shared by all who await it, and again after
    it failed (the database or Redis was down), not for ever after: how the device gateway and
    the tool catalogue start with a process's first connection."""

    def __init__(self, start: Callable[[], Awaitable[None]]) -> None:
        self._start = start
        self._ready: asyncio.Future[None] | None = None
        self.loop: asyncio.AbstractEventLoop | None = None  # where it last started

    async def __call__(self) -> None:
        loop = asyncio.get_running_loop()
        ready = self._ready
        failed = ready is not None and ready.done() and (ready.cancelled() or ready.exception() is not None)
        if ready is None or self.loop is not loop or failed:
            self.loop = loop
            ready = self._ready = asyncio.ensure_future(self._start())
        await asyncio.shield(ready)


_process = Tasks("background")


def spawn(work: Awaitable[T]) -> asyncio.Future[T]:
    """Run `work` in the background for as long as it takes, whoever started it."""
    return _process.spawn(work)


class Service(Protocol):
    """A background service of the hub's (the automations engine, the outbound endpoints'
    supervisor), which `serve` runs in its process and a command runs on its own."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


def run_until_signalled(make: Callable[[], Service]) -> None:
    """Run the service `make` builds on an event loop of its own until SIGINT or SIGTERM, then
    stop it (the commands that run one beside bare daphne)."""

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        service = make()
        await service.start()
        try:
            await stop.wait()
        finally:
            await service.stop()

    asyncio.run(main())
