"""Writes from the event loop, run in Django's database thread in batches that share one hop.

A service's write (an app's `services.py`: `devices.home.services`, `devices.agents.services`,
`audit.services`...) is sync code: one `transaction.atomic()` with the row, its audit `Event`
and its announcement. Called from the event loop (MCP tools, device links, the MQTT worker,
the tool-call audit), each call is a hop to Django's database thread: `sync_to_async`, two thread
wake-ups and the GIL handed over twice, which costs about as much CPU as the ORM work of
the write itself. `batched(service)` is the service's async form that shares the hop among
the calls made at the same time:

- a call queues itself; when no batch is running, it starts one at once, so a lone write
  waits for nobody and runs exactly as `sync_to_async(service)` would;
- calls made while a batch runs wait for it to end, as they would behind it in the database
  thread's queue, and then go together, up to MAX_BATCH, in one hop: each in its own
  transaction, as when called alone (a failing one fails alone), one after the other;
- every caller is answered once its own transaction has committed and its `on_commit` work
  (the announcement, the home-state copy dropped) has run; with Redis, the announcements go
  out from the callers' event loop (`common.feed.writes_from`).

Measured in one process (`aset_light_state`, 16 writers): on SQLite 770 -> 590 µs of CPU per
write. Sharing the commit as well (a savepoint per call in one transaction) bought nothing
more on SQLite and cost PostgreSQL two round trips per call. Same database thread, same
connection and same rules on SQLite and PostgreSQL. A call whose caller is cancelled before
its batch starts is not run.

Callers are coroutines on an event loop, but not all of them are the hub's own: a REST or
dashboard write runs its tool through the pipeline from the request's thread
(`mcp_endpoint.engine.from_sync`: `async_to_sync`), so the coroutine that calls here belongs to
that thread, and `sync_to_async` runs the sync work back in that thread while it waits (its
connection, its transaction). A batch therefore runs in the context of its first caller still
waiting: that caller's thread is the one sure to be waiting for the batch to end (a thread
whose call has been answered may have moved on), and the others' writes, each in its own
transaction, run there too.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import weakref
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, ParamSpec, TypeVar

from asgiref.sync import sync_to_async

from common.feed import writes_from

MAX_BATCH = 64

P = ParamSpec("P")
R = TypeVar("R")
Outcome = tuple[bool, Any]  # (succeeded, the result or the exception)


class _Call:
    __slots__ = ("context", "future", "run")

    def __init__(self, run: Callable[[], Any], future: asyncio.Future[Any]) -> None:
        self.run, self.future = run, future
        self.context = contextvars.copy_context()  # the caller's: whose thread the batch may use


class _Lane:
    """The calls waiting on one event loop, and whether a batch of them is running."""

    def __init__(self) -> None:
        self.waiting: deque[_Call] = deque()
        self.draining: asyncio.Task[None] | None = None


_lanes: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Lane] = weakref.WeakKeyDictionary()


def batched(service: Callable[P, R]) -> Callable[P, Awaitable[R]]:
    """The async form of `service`, a sync function of the database thread."""

    @functools.wraps(service)
    async def call(*args: P.args, **kwargs: P.kwargs) -> R:
        loop = asyncio.get_running_loop()
        lane = _lanes.get(loop)
        if lane is None:
            lane = _lanes[loop] = _Lane()
        future: asyncio.Future[R] = loop.create_future()
        lane.waiting.append(_Call(functools.partial(service, *args, **kwargs), future))
        if lane.draining is None:
            lane.draining = loop.create_task(_drain(lane))
        return await future

    return call


async def _drain(lane: _Lane) -> None:
    """Run the waiting calls, batch after batch, until none waits."""
    loop = asyncio.get_running_loop()
    batch: list[_Call] = []
    try:
        while lane.waiting:
            batch = [lane.waiting.popleft() for _ in range(min(MAX_BATCH, len(lane.waiting)))]
            waiting = [call for call in batch if not call.future.cancelled()]
            if not waiting:
                batch = []
                continue
            # In the context of a caller still waiting for it, never of one already answered;
            # their announcements go out from this loop.
            context = waiting[0].context.copy()
            context.run(writes_from, loop)
            outcomes = await loop.create_task(_arun(batch), context=context)
            for call, (ok, value) in zip(batch, outcomes, strict=True):
                if not call.future.done():
                    call.future.set_result(value) if ok else call.future.set_exception(value)
            batch = []
    except BaseException:  # cancelled (the loop is stopping): so are the callers still waiting
        for call in [*batch, *lane.waiting]:
            call.future.cancel()
        lane.waiting.clear()
        raise
    finally:
        lane.draining = None


def _run(batch: list[_Call]) -> list[Outcome]:
    """In the database thread: the calls not cancelled meanwhile, one after the other."""
    cancelled = (False, asyncio.CancelledError())
    return [cancelled if call.future.cancelled() else _outcome(call.run) for call in batch]


def _outcome(run: Callable[[], Any]) -> Outcome:
    try:
        return True, run()
    except Exception as exc:
        return False, exc


_arun = sync_to_async(_run)
