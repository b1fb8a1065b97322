"""The channel layer of a hub without Redis: Channels' layer API, in memory within a process
and through the database between processes, so that every hub process (daphne, `mcp_stdio`,
the MQTT worker, a management command) hears every other on `make run`'s defaults.

One mechanism:

- Channels and groups live in memory. A message for a channel or group member of this
  process is delivered at once, without the database.
- A process that listens (it has used the layer on an event loop) registers in
  `FeedProcess` and renews the row every `beat_seconds`; a row not renewed for three beats
  is a process that died.
- A message that concerns another process becomes one `FeedMessage` row: a group message
  while another process lives, or a message to another process's channel. Sent from sync
  code inside a transaction (`announce`), the row is written in that transaction, so it
  appears exactly when the change commits, and the local delivery waits for the commit;
  anything else is handed to this process's feed thread, which writes it at once. A lone
  process (`make run`, the tests' own transactions) never writes a message row.
- Each listening process's feed thread reads the rows past the last it saw every
  `poll_seconds` (one query on the primary key) and hands them to the event loop. On
  PostgreSQL ids can commit out of order: an id skipped by a read is looked for again for
  `GAP_SECONDS`.
- The same thread deletes rows older than `keep_seconds` and processes gone for a while.

Messages cross processes as JSON; within a process they are shared, not copied, so a
receiver must not change one. The feed thread never waits on an event loop, and sync
senders never wait on the feed thread.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import logging
import os
import queue
import re
import secrets
import socket
import threading
import time
from collections import deque
from datetime import timedelta
from typing import Any

from asgiref.sync import sync_to_async
from channels.exceptions import ChannelFull
from channels.layers import BaseChannelLayer
from django.db import close_old_connections, connections, transaction
from django.db.models import Max, Q
from django.utils import timezone

logger = logging.getLogger(__name__)

GAP_SECONDS = 2.0  # how long an id skipped by a read may still commit (PostgreSQL)
MAX_GAPS = 1000
READ_LIMIT = 500
REGISTRY_SECONDS = 1.0  # how long a sender trusts what it read of the live processes


class _Inbox:
    """One channel's waiting messages (expiry, message) and the receivers waiting for one."""

    __slots__ = ("messages", "waiters")

    def __init__(self) -> None:
        self.messages: deque[tuple[float, dict[str, Any]]] = deque()
        self.waiters: deque[asyncio.Future[None]] = deque()


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class DatabaseChannelLayer(BaseChannelLayer):
    extensions = ["groups", "flush"]

    def __init__(
        self,
        expiry: int = 60,
        capacity: int = 100,
        channel_capacity: dict[re.Pattern[str] | str, int] | None = None,
        database: str = "default",
        poll_seconds: float = 0.05,
        beat_seconds: float = 2.0,
        keep_seconds: float = 60.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(expiry=expiry, capacity=capacity, channel_capacity=channel_capacity, **kwargs)
        self.database = database
        self.poll_seconds = poll_seconds
        self.beat_seconds = beat_seconds
        self.keep_seconds = keep_seconds
        self.name = secrets.token_hex(8)  # this process, in its channels' names and FeedProcess
        self._inboxes: dict[str, _Inbox] = {}
        self._groups: dict[str, set[str]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._feed: _Feed | None = None
        self._feed_lock = threading.Lock()
        self._others = (float("-inf"), False)  # (when read, whether another process lives)

    # --- Channels' API ---------------------------------------------------------------------

    async def new_channel(self, prefix: str = "specific") -> str:
        self._use_loop()
        return f"{prefix}.{self.name}!{secrets.token_hex(6)}"

    def owns(self, channel: str) -> bool:
        """Whether `channel` is one of this process's (anything without a process is local)."""
        return "!" not in channel or channel.partition("!")[0].endswith(f".{self.name}")

    async def send(self, channel: str, message: dict[str, Any]) -> None:
        assert isinstance(message, dict), "message is not a dict"
        self.require_valid_channel_name(channel)
        self._use_loop()
        if self.owns(channel):
            if not self._put(channel, message):
                raise ChannelFull(channel)
        else:
            self._feed_thread().post("", channel, message)

    async def receive(self, channel: str) -> dict[str, Any]:
        self.require_valid_channel_name(channel)
        loop = self._use_loop()
        inbox = self._inboxes.setdefault(channel, _Inbox())
        while True:
            now = time.monotonic()
            while inbox.messages and inbox.messages[0][0] < now:
                inbox.messages.popleft()
            if inbox.messages:
                return inbox.messages.popleft()[1]
            waiter = loop.create_future()
            inbox.waiters.append(waiter)
            try:
                await waiter
            finally:
                if waiter in inbox.waiters:
                    inbox.waiters.remove(waiter)
                if not inbox.messages and not inbox.waiters and self._inboxes.get(channel) is inbox:
                    del self._inboxes[channel]
            inbox = self._inboxes.setdefault(channel, inbox)

    async def group_add(self, group: str, channel: str) -> None:
        self.require_valid_group_name(group)
        self.require_valid_channel_name(channel)
        self._use_loop()
        self._groups.setdefault(group, set()).add(channel)

    async def group_discard(self, group: str, channel: str) -> None:
        self.require_valid_group_name(group)
        self.require_valid_channel_name(channel)
        members = self._groups.get(group)
        if members is not None:
            members.discard(channel)
            if not members:
                del self._groups[group]

    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        assert isinstance(message, dict), "message is not a dict"
        self.require_valid_group_name(group)
        self._use_loop()
        self._deliver(group, "", message)
        self._feed_thread().post(group, "", message)

    async def flush(self) -> None:
        self._inboxes.clear()
        self._groups.clear()

    async def close(self) -> None:
        """Stop hearing the others: what waits is written and the process leaves the registry."""
        feed, self._feed = self._feed, None
        if feed is not None:
            await sync_to_async(feed.stop, thread_sensitive=False)()

    # --- from sync code --------------------------------------------------------------------

    def announce(self, group: str, message: dict[str, Any]) -> None:
        """Send `message` to `group` in every process once the current transaction commits
        (at once outside one). Never waits on an event loop or on the feed thread: callable
        from any thread, including Django's database thread after its loop has stopped."""
        connection = transaction.get_connection(self.database)
        if not connection.in_atomic_block:
            self._deliver_threadsafe(group, "", message)
            self._feed_thread().post(group, "", message)
            return
        if self.others_alive() and _encodable(message):
            from common.models import FeedMessage

            FeedMessage.objects.using(self.database).create(
                origin=self.name, group=group, message=message, at=timezone.now()
            )
        transaction.on_commit(lambda: self._deliver_threadsafe(group, "", message), using=self.database)

    def others_alive(self) -> bool:
        """Whether another hub process listens (read at most once a REGISTRY_SECONDS, here
        or by the feed thread)."""
        read_at, alive = self._others
        if time.monotonic() - read_at < REGISTRY_SECONDS:
            return alive
        from common.models import FeedProcess

        cutoff = timezone.now() - timedelta(seconds=3 * self.beat_seconds)
        alive = (
            FeedProcess.objects.using(self.database)
            .filter(seen_at__gte=cutoff)
            .exclude(name=self.name)
            .exists()
        )
        self._others = (time.monotonic(), alive)
        return alive

    def feed_epoch(self) -> int | None:
        """A number that changes whenever this process may have missed another's message; None
        while it does not hear them all (not listening yet, just registered, or its feed is
        failing). A copy of shared state is current while the epoch it was read in holds."""
        feed = self._feed
        return None if feed is None else feed.epoch()

    # --- delivery within the process ---------------------------------------------------------

    def _use_loop(self) -> asyncio.AbstractEventLoop:
        """Remember the loop this process's channels are served on; from then on, listen."""
        loop = asyncio.get_running_loop()
        self._loop = loop
        self._feed_thread().listen()
        return loop

    def _put(self, channel: str, message: dict[str, Any]) -> bool:
        """Queue `message` for `channel` (on the loop's thread); False when the channel is full.
        A full channel whose oldest message expired has no reader: it leaves its groups."""
        inbox = self._inboxes.setdefault(channel, _Inbox())
        now = time.monotonic()
        if len(inbox.messages) >= self.get_capacity(channel):
            if inbox.messages[0][0] < now:
                del self._inboxes[channel]
                for members in self._groups.values():
                    members.discard(channel)
            return False
        inbox.messages.append((now + self.expiry, message))
        current = _running_loop()
        while inbox.waiters:
            waiter = inbox.waiters.popleft()
            loop = waiter.get_loop()
            if waiter.done() or loop.is_closed():
                continue
            if loop is current:
                _wake(waiter)
            else:
                loop.call_soon_threadsafe(_wake, waiter)
            break
        return True

    def _deliver(self, group: str, channel: str, message: dict[str, Any]) -> None:
        """To this process's members of `group`, or to its `channel`; a full channel misses it."""
        for member in [channel] if channel else list(self._groups.get(group, ())):
            self._put(member, message)

    def _deliver_threadsafe(self, group: str, channel: str, message: dict[str, Any]) -> None:
        loop = self._loop
        if loop is None or loop.is_closed() or loop is _running_loop():
            self._deliver(group, channel, message)  # no loop serves the channels now, or this one
        else:
            loop.call_soon_threadsafe(self._deliver, group, channel, message)

    def _deliver_rows(self, rows: list[tuple[str, str, dict[str, Any]]]) -> None:
        for group, channel, message in rows:
            self._deliver(group, channel, message)

    def _feed_thread(self) -> _Feed:
        feed = self._feed
        if feed is None or not feed.is_alive():
            with self._feed_lock:
                if self._feed is None or not self._feed.is_alive():
                    self._feed = _Feed(self)
                    self._feed.start()
                feed = self._feed
        return feed


def _encodable(message: dict[str, Any]) -> bool:
    try:
        json.dumps(message)
    except (TypeError, ValueError):
        logger.error("channel layer: a %s message is not JSON; other processes miss it", message.get("type"))
        return False
    return True


class _Feed(threading.Thread):
    """A process's link to the others, on its own database connection: writes what is posted,
    keeps the registration, reads the others' rows and hands them to the event loop."""

    def __init__(self, layer: DatabaseChannelLayer) -> None:
        super().__init__(name="channel-layer-feed", daemon=True)
        self.layer = layer
        self.outbox: queue.SimpleQueue[tuple[str, str, dict[str, Any]]] = queue.SimpleQueue()
        self.wake = threading.Event()
        self.listening = False
        self.stopping = False
        self.last_id: int | None = None
        self.gaps: dict[int, float] = {}
        self.healthy_since: float | None = None  # registered and reading without a failure since
        self.missed = 0  # times the feed failed (each may have lost messages)
        self.last_read = float("-inf")
        atexit.register(self.stop)

    def post(self, group: str, channel: str, message: dict[str, Any]) -> None:
        """Write a message for the others (dropped, for a group, when nobody else lives)."""
        self.outbox.put((group, channel, message))
        self.wake.set()

    def listen(self) -> None:
        if not self.listening:
            self.listening = True
            self.wake.set()

    def fresh_seconds(self) -> float:
        """How old the last read may be while this process still counts as hearing the others."""
        return max(1.0, 20 * self.layer.poll_seconds)

    def epoch(self) -> int | None:
        since, now = self.healthy_since, time.monotonic()
        settled = since is not None and now - since > REGISTRY_SECONDS + self.layer.poll_seconds
        fresh = now - self.last_read < self.fresh_seconds()
        return self.missed if settled and fresh else None

    def stop(self) -> None:
        """At exit: write what waits, leave the registry (bounded: exit must not hang)."""
        self.stopping = True
        self.wake.set()
        if self.is_alive():
            self.join(2.0)

    def run(self) -> None:
        layer = self.layer
        next_beat = next_prune = 0.0
        while True:
            self.wake.wait(layer.poll_seconds)
            self.wake.clear()
            stopping = self.stopping
            try:
                now = time.monotonic()
                if self.listening and now >= next_beat:
                    self._beat()
                    next_beat = now + layer.beat_seconds
                self._write()
                if self.listening and self.healthy_since is not None:
                    self._read()
                if self.listening and now >= next_prune:
                    self._prune()
                    next_prune = now + layer.keep_seconds / 4
            except Exception:
                if self.healthy_since is not None or self.missed == 0:
                    logger.warning("channel layer: the database feed failed; retrying", exc_info=True)
                self.healthy_since, self.missed = None, self.missed + 1
                next_beat = 0.0
                with contextlib.suppress(Exception):  # a broken connection is replaced next round
                    close_old_connections()
            if stopping:
                self._leave()
                return

    def _beat(self) -> None:
        from common.models import FeedMessage, FeedProcess

        layer, now = self.layer, timezone.now()
        processes = FeedProcess.objects.using(layer.database)
        if not processes.filter(name=layer.name).update(seen_at=now):
            if self.last_id is not None:  # dropped as gone: the others stopped writing for it
                self.missed += 1
            self.last_id = FeedMessage.objects.using(layer.database).aggregate(Max("id"))["id__max"] or 0
            self.gaps.clear()
            processes.create(
                name=layer.name, host=socket.gethostname()[:255], pid=os.getpid(), started_at=now, seen_at=now
            )
        cutoff = now - timedelta(seconds=3 * layer.beat_seconds)
        alive = processes.filter(seen_at__gte=cutoff).exclude(name=layer.name).exists()
        layer._others = (time.monotonic(), alive)
        if self.healthy_since is None:
            self.healthy_since = time.monotonic()

    def _write(self) -> None:
        from common.models import FeedMessage

        posted = []
        while True:
            try:
                posted.append(self.outbox.get_nowait())
            except queue.Empty:
                break
        if not posted:
            return
        now, layer = timezone.now(), self.layer
        rows = [
            FeedMessage(origin=layer.name, group=group, channel=channel, message=message, at=now)
            for group, channel, message in posted
            if (channel or layer.others_alive()) and _encodable(message)
        ]
        FeedMessage.objects.using(layer.database).bulk_create(rows)

    def _read(self) -> None:
        from common.models import FeedMessage

        layer = self.layer
        assert self.last_id is not None
        wanted = Q(id__gt=self.last_id)
        if self.gaps:
            wanted |= Q(id__in=list(self.gaps))
        rows = list(
            FeedMessage.objects.using(layer.database)
            .filter(wanted)
            .order_by("id")
            .values_list("id", "origin", "group", "channel", "message")[:READ_LIMIT]
        )
        now = time.monotonic()
        if now - self.last_read > self.fresh_seconds():
            self.missed += 1  # stalled (or the first read): what was kept before is not trusted
        self.last_read = now
        deliveries = []
        for row_id, origin, group, channel, message in rows:
            self.gaps.pop(row_id, None)
            if row_id > self.last_id:
                for skipped in range(max(self.last_id + 1, row_id - MAX_GAPS), row_id):
                    self.gaps[skipped] = now
                self.last_id = row_id
            if origin != layer.name and (not channel or layer.owns(channel)):
                deliveries.append((group, channel, message))
        for gap, seen in list(self.gaps.items()):
            if now - seen > GAP_SECONDS:
                del self.gaps[gap]
        if len(rows) == READ_LIMIT:
            self.wake.set()  # more wait: read again at once
        loop = layer._loop
        if deliveries and loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(layer._deliver_rows, deliveries)

    def _prune(self) -> None:
        from common.models import FeedMessage, FeedProcess

        layer, now = self.layer, timezone.now()
        FeedMessage.objects.using(layer.database).filter(
            at__lt=now - timedelta(seconds=layer.keep_seconds)
        ).delete()
        gone = now - timedelta(seconds=10 * layer.beat_seconds)
        FeedProcess.objects.using(layer.database).filter(seen_at__lt=gone).delete()

    def _leave(self) -> None:
        from common.models import FeedProcess

        try:
            self._write()
            if self.listening:
                FeedProcess.objects.using(self.layer.database).filter(name=self.layer.name).delete()
        except Exception:
            logger.debug("channel layer: could not leave the registry", exc_info=True)
        finally:
            connections.close_all()  # this thread's
