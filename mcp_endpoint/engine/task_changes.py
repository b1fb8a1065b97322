"""Waiting for tasks of the MCP tasks extension to change, whichever process changes them:
`mcp_endpoint.services` announces every change on TASKS_GROUP once it commits, and this
process, once something here waits, listens to that group. An announcement can be lost (the
channel layer away, another process not yet aware of this one's listener), so whoever waits
reads the task again after a while anyway."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterable
from typing import Any

from common.groups import ProcessChannel
from mcp_endpoint.services import TASK_CHANGED, TASKS_GROUP

# The events of those here that wait on a task, by task id, each with its event loop.
_waiting: dict[str, set[tuple[asyncio.AbstractEventLoop, asyncio.Event]]] = {}


async def _heard(message: dict[str, Any]) -> None:
    if message.get("type") != TASK_CHANGED:
        return
    here = asyncio.get_running_loop()
    for loop, event in list(_waiting.get(str(message.get("task")), ())):
        if loop is here:
            event.set()
        else:
            with contextlib.suppress(RuntimeError):  # its loop has closed: so has its wait
                loop.call_soon_threadsafe(event.set)


_listener = ProcessChannel(_heard, "MCP tasks", (TASKS_GROUP,))


@contextlib.asynccontextmanager
async def changes(task_ids: Iterable[str]) -> AsyncIterator[asyncio.Event]:
    """An event set whenever one of `task_ids` is announced changed, from the moment the block
    starts: read the tasks, then wait with `changed_or_after`, and read them again."""
    await _listener.join()
    waiter = (asyncio.get_running_loop(), asyncio.Event())
    ids = set(task_ids)
    for task_id in ids:
        _waiting.setdefault(task_id, set()).add(waiter)
    try:
        yield waiter[1]
    finally:
        for task_id in ids:
            waiters = _waiting.get(task_id, set())
            waiters.discard(waiter)
            if not waiters:
                _waiting.pop(task_id, None)


async def changed_or_after(event: asyncio.Event, seconds: float) -> None:
    """Return once `event` is set (clearing it: what changes from then on sets it again) or
    `seconds` have passed, whichever comes first."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(event.wait(), seconds)
    event.clear()
