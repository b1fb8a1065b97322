"""Announcing a committed change to every hub process, from sync code (a service's transaction).

`announce(group, message)` sends `message` to the channel-layer `group` once the current
transaction commits (at once outside one) and returns without waiting for anything: the
committing thread may be Django's database thread of an event loop that is stopping (a
SIGTERM), which must never wait for that loop. With the database channel layer the message
is written in the transaction itself (`common.layers`). With Redis it is sent from the event
loop whose write it is, when the write came from one (`common.write_batches` says which, with
`writes_from`): handed over with `call_soon_threadsafe`, never waited for, and sent there as
any other message of that loop. A write made elsewhere (a sync view, a command), or whose loop
has closed, is sent from a thread of the feed's own, on an event loop of its own. A third
thread per write would cost as much as the send: every hand-over between threads that all
want the GIL is paid in wake-ups. A failure is logged: it never undoes the change.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import logging
import threading
from contextvars import ContextVar
from typing import Any

from channels.layers import get_channel_layer
from django.db import transaction

from common.layers import DatabaseChannelLayer
from common.tasks import spawn

logger = logging.getLogger(__name__)

# The event loop whose write the database thread is running, if any.
_writer_loop: ContextVar[asyncio.AbstractEventLoop | None] = ContextVar("feed_writer_loop", default=None)


def writes_from(loop: asyncio.AbstractEventLoop) -> None:
    """Announce what the current context commits from `loop` (set in the task that hands
    writes to the database thread: the context goes there with them)."""
    _writer_loop.set(loop)


def announce(group: str, message: dict[str, Any]) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    if isinstance(layer, DatabaseChannelLayer):
        layer.announce(group, message)
    else:
        loop = _writer_loop.get()
        transaction.on_commit(lambda: _send(layer, group, message, loop))


def _send(layer: Any, group: str, message: dict[str, Any], loop: asyncio.AbstractEventLoop | None) -> None:
    if loop is not None:
        try:
            loop.call_soon_threadsafe(_send_on_loop, layer, group, message)
            return
        except RuntimeError:  # the loop has closed
            pass
    _sender.send(layer, group, message)


def _send_on_loop(layer: Any, group: str, message: dict[str, Any]) -> None:
    spawn(_send_here(layer, group, message))


async def _send_here(layer: Any, group: str, message: dict[str, Any]) -> None:
    try:
        await _group_send(layer, group, message)
    except asyncio.CancelledError:
        # The loop is stopping (a SIGTERM cancels what it runs): the feed's own thread sends it,
        # within its exit grace. Twice at worst, if Redis had it already: every listener takes
        # a change heard twice as it takes it once.
        _sender.send(layer, group, message)
        raise


class _Sender:
    """An event loop in a daemon thread for sync code's sends to a layer such as Redis; what
    is still being sent at exit gets EXIT_SECONDS to go out."""

    EXIT_SECONDS = 2.0

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()
        self._pending: set[concurrent.futures.Future[None]] = set()
        atexit.register(self.finish)

    def _running(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name="channel-layer-sender", daemon=True).start()
                self._loop = loop
            return self._loop

    def send(self, layer: Any, group: str, message: dict[str, Any]) -> None:
        future = asyncio.run_coroutine_threadsafe(_group_send(layer, group, message), self._running())
        self._pending.add(future)
        future.add_done_callback(self._pending.discard)

    def finish(self) -> None:
        concurrent.futures.wait(list(self._pending), timeout=self.EXIT_SECONDS)


async def _group_send(layer: Any, group: str, message: dict[str, Any]) -> None:
    try:
        await layer.group_send(group, message)
    except Exception:  # a dead Redis must not undo a committed change
        logger.exception("could not announce %s to %s", message.get("type"), group)


_sender = _Sender()
