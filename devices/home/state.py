"""The home's state (lights, alarm, presence) kept in this process for MCP reads, so that a read
on the event loop needs no hop to Django's database thread.

The change feed keeps the copy correct: a change made here drops it as its transaction
commits, before the write returns (`devices.home.services`); a change made by another process
drops it when its `home.event` arrives (a listener on the home group). The copy is trusted
only while this process hears every other one: its listener has been running for a moment,
and with the database channel layer, the feed has not failed since the copy was read
(`DatabaseChannelLayer.feed_epoch`). Otherwise, and until then, every read goes to the
database. A copy is kept at most COPY_SECONDS, so that a change whose message the layer lost
(Redis restarting under its pub/sub layer, which tells no listener) is read within them. The
copy is only filled from reads made outside any transaction, so it never holds
rows that a transaction could still roll back (tests run inside one).

Until then (a process's first second or so, docs/PERFORMANCE.md "stdio's first second"), the
calls waiting behind a read under way share the next one (`_Reads`): each still gets a read
that began after it arrived, but sixteen calls in flight cost one read, not sixteen in a row.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import weakref
from typing import Any

from asgiref.sync import SyncToAsync, sync_to_async
from django.db import connections, router

from audit.changes import CHANGES_GROUP
from common.groups import channel_layer
from devices.home import schemas, selectors
from devices.home.models import Light

logger = logging.getLogger(__name__)

SETTLE_SECONDS = 0.5  # a new listener's group membership is in place well within this
COPY_SECONDS = 2.0
HOME_KINDS = frozenset({"light", "alarm", "person", "home"})


class _Copy:
    __slots__ = ("alarm", "epoch", "lights", "present", "until")

    def __init__(self, epoch: Any, state: schemas.AllStatesOut) -> None:
        self.epoch = epoch
        self.until = time.monotonic() + COPY_SECONDS
        self.lights: tuple[tuple[str, bool], ...] = tuple(state["lights"].items())
        self.alarm: bool = state["alarm"]
        self.present: tuple[str, ...] = tuple(state["presence"]["known_people"])


_copy: _Copy | None = None
_generation = 0  # bumped by every `forget`: a read that began before it must not be kept
_lock = threading.Lock()


def forget() -> None:
    """Drop the copy (a change committed here or heard from elsewhere)."""
    global _copy, _generation
    with _lock:
        _copy, _generation = None, _generation + 1


class _Listener:
    """This process's member of the home group that drops the copy on every home change."""

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self.task: asyncio.Task[None] | None = None
        self.since: float | None = None  # listening without a failure since
        self.starts = 0

    def epoch(self) -> Any:
        """What must hold for a copy to stay trusted; None when no copy may be trusted now."""
        loop = asyncio.get_running_loop()
        if self.loop is not loop or self.task is None or self.task.done():
            self.loop, self.since, self.starts = loop, None, self.starts + 1
            self.task = loop.create_task(self._listen())
            return None
        if self.since is None or time.monotonic() - self.since < SETTLE_SECONDS:
            return None
        feed_epoch = getattr(channel_layer(), "feed_epoch", None)
        if feed_epoch is None:  # Redis: this listener hears every process
            return self.starts
        feed = feed_epoch()
        return None if feed is None else (self.starts, feed)

    async def _listen(self) -> None:
        layer = channel_layer()
        channel = await layer.new_channel()
        while True:
            try:
                await layer.group_add(CHANGES_GROUP, channel)
                self.since = time.monotonic()
                while True:
                    message = await layer.receive(channel)
                    if (message.get("event") or {}).get("kind") in HOME_KINDS:
                        forget()
            except asyncio.CancelledError:
                raise
            except Exception:
                self.since = None
                forget()
                logger.exception("home state: the channel layer failed; reading the database meanwhile")
                await asyncio.sleep(1)


_listener = _Listener()


def _read(generation: int, epoch: Any) -> schemas.AllStatesOut:
    """Read the state through Django (its thread) and keep it when that is safe."""
    global _copy
    state = selectors.get_all_states()
    if epoch is not None and not connections[router.db_for_read(Light)].in_atomic_block:
        with _lock:
            if generation == _generation:
                _copy = _Copy(epoch, state)
    return state


_aread = sync_to_async(_read)


class _Reads:
    """The database reads of calls that may not use the copy, per event loop and per asgiref
    thread-sensitive context (the thread, so the connection, that a read runs on): one at a
    time, and a call that finds one under way waits for the next, which starts when that one
    ends and serves every call that arrived meanwhile. No call gets a read begun before it
    arrived, so none misses a change committed before its call."""

    def __init__(self) -> None:
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[Any, _Turns]] = (
            weakref.WeakKeyDictionary()
        )

    async def read(self, epoch: Any) -> schemas.AllStatesOut:
        loop = asyncio.get_running_loop()
        turns = self._loops.setdefault(loop, {})
        where = SyncToAsync.thread_sensitive_context.get(None)
        turn = turns.get(where)
        if turn is None:
            turn = turns[where] = _Turns()
        if turn.next is None or turn.next.done():  # done before it began: cancelled
            turn.next = loop.create_task(self._after(turns, where, turn, epoch))
        # Shielded: a call cancelled (or timed out) leaves the read to the others sharing it.
        return await asyncio.shield(turn.next)

    @staticmethod
    async def _after(turns: dict[Any, _Turns], where: Any, turn: _Turns, epoch: Any) -> schemas.AllStatesOut:
        running = turn.running
        if running is not None and not running.done():
            await asyncio.wait([running])  # whatever its outcome
        # From here on, a new call waits for the read after this one.
        turn.running, turn.next = turn.next, None
        try:
            # The generation as the read starts: a change dropped before it is in the read.
            return await _aread(_generation, epoch)
        finally:
            if turn.next is None and turns.get(where) is turn:  # nobody waits: forget the context
                del turns[where]


class _Turns:
    __slots__ = ("next", "running")

    def __init__(self) -> None:
        self.running: asyncio.Task[schemas.AllStatesOut] | None = None  # the read under way
        self.next: asyncio.Task[schemas.AllStatesOut] | None = None  # the one waiting for it


_reads = _Reads()


async def _current() -> _Copy | schemas.AllStatesOut:
    """The kept copy when it may be trusted, else the state read afresh."""
    epoch = _listener.epoch()
    kept = _copy
    if epoch is not None and kept is not None and kept.epoch == epoch and time.monotonic() < kept.until:
        return kept
    return await _reads.read(epoch)


def _presence(copy: _Copy) -> schemas.PresenceOut:
    return {"present": bool(copy.present), "known_people": list(copy.present)}


async def all_states() -> schemas.AllStatesOut:
    found = await _current()
    if not isinstance(found, _Copy):
        return found
    return {"lights": dict(found.lights), "alarm": found.alarm, "presence": _presence(found)}


async def alarm_status() -> schemas.AlarmStatusOut:
    found = await _current()
    return {"armed": found.alarm if isinstance(found, _Copy) else found["alarm"]}


async def presence() -> schemas.PresenceOut:
    found = await _current()
    return _presence(found) if isinstance(found, _Copy) else found["presence"]


async def lights_on() -> schemas.LightsOnOut:
    found = await _current()
    lights = found.lights if isinstance(found, _Copy) else tuple(found["lights"].items())
    return {"on": [name for name, on in lights if on]}
