"""Telemetry from the broker to the database, in batches, without losing any or storing any twice.

paho's network thread only queues each message (`offer`); a writer thread takes up to
`batch_size` messages, or what came within `batch_seconds` of the first, and in one
transaction records their deliveries (`telemetry_services.record_deliveries`), parses and
stores those not stored before (`store_batch`); only after the commit does it acknowledge
the QoS 1 ones. So a crash or a database outage loses nothing (the broker sends again what
was never acknowledged), and what the broker sends again after the commit is recognised by
its session and packet id and acknowledged without being stored twice. The queue is
bounded: when it is full the network thread waits, the broker stops sending (TCP and MQTT
flow control) and queues for us instead.

Messages arrive through a `Source`: the worker's own connection, or a session it adopted
from a stopped worker (devices/mqtt/adoption.py). Acknowledgements belong to one connection
of a source: packet ids restart on each one. Messages of a lost connection are neither
acknowledged nor kept (QoS 1 ones come back); the source's `generation` tells them apart.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db import close_old_connections, connection, transaction

from devices.telemetry import metrics
from devices.telemetry import services as telemetry_services
from devices.telemetry.parsing import Heartbeat, Rejected, parse
from devices.telemetry.services import Delivery, message_digest

logger = logging.getLogger(__name__)

RETRY_MAX_SECONDS = 10.0
# The connection's age and health (CONN_MAX_AGE, CONN_HEALTH_CHECKS) are looked at this often,
# not before every batch: with health checks on, each look costs a `SELECT 1` on the next use.
CONNECTION_CHECK_SECONDS = 1.0
PRUNE_EVERY_REJECTIONS = 500

Ack = Callable[[int, int], object]  # paho's Client.ack: (message id, qos)
Stored = Callable[[list[dict[str, Any]], set[str]], None]


class Source:
    """A broker session messages arrive through: its client id, how to acknowledge on its
    current connection, and that connection's generation."""

    def __init__(self, session: str, ack: Ack) -> None:
        self.session = session
        self.ack = ack
        self.generation = 0


@dataclass(slots=True)
class Incoming:
    topic: str
    payload: bytes
    mid: int
    qos: int
    repeat: bool  # the broker's DUP flag
    source: Source
    generation: int
    received: float

    @property
    def delivery(self) -> Delivery | None:
        if not self.qos:
            return None  # never sent again: nothing to recognise
        digest = message_digest(self.topic, self.payload)
        return Delivery(self.source.session, self.mid, digest, self.repeat)


class Ingestor:
    def __init__(
        self,
        on_stored: Stored,
        *,
        batch_size: int,
        batch_seconds: float,
        queue_limit: int,
        rejected_keep: int,
    ) -> None:
        self._on_stored = on_stored
        self.batch_size = max(1, batch_size)
        self.batch_seconds = batch_seconds
        self.queue_limit = max(queue_limit, self.batch_size)
        self.rejected_keep = rejected_keep
        self._queue: deque[Incoming] = deque()
        self._lock = threading.Condition()
        # Held while acknowledging and while a connection is declared lost, apart from the
        # queue's lock so that paho's thread keeps queueing while a batch is acknowledged.
        self._acks = threading.RLock()  # reentrant like the queue's: an ack may run paho's callbacks
        self._stopping = False
        self._thread: threading.Thread | None = None
        self.counters = {
            "received": 0,
            "stored": 0,
            "rejected": 0,
            "heartbeats": 0,
            "batches": 0,
            "repeats": 0,
        }
        self._rejections_since_prune = 0
        self._connection_checked = 0.0

    # --- paho's network threads ------------------------------------------------------------

    def offer(
        self, source: Source, topic: str, payload: bytes, mid: int, qos: int, repeat: bool = False
    ) -> None:
        """Queue a message received through `source` (waits while the queue is full);
        `repeat` is the broker's DUP flag."""
        incoming = Incoming(topic, payload, mid, qos, repeat, source, source.generation, time.time())
        with self._lock:
            while len(self._queue) >= self.queue_limit and not self._stopping:
                self._lock.wait(0.5)  # backpressure: stop reading until the writer catches up
            self._queue.append(incoming)
            self.counters["received"] += 1
            if len(self._queue) == 1 or len(self._queue) >= self.batch_size:
                self._lock.notify_all()

    def connection_lost(self, source: Source) -> None:
        """Forget the lost connection's unacknowledged messages: the broker sends them again."""
        with self._acks, self._lock:
            source.generation += 1
            self._queue = deque(m for m in self._queue if m.source is not source or m.qos == 0)

    @property
    def backlog(self) -> int:
        return len(self._queue)

    # --- the writer thread ---------------------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="mqtt-ingest", daemon=True)
        self._thread.start()

    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def stop(self, timeout: float = 10.0) -> None:
        """Write what is queued, then end the writer thread."""
        with self._lock:
            self._stopping = True
            self._lock.notify_all()
        if self._thread is not None:
            self._thread.join(timeout)

    def _take(self) -> list[Incoming]:
        with self._lock:
            while not self._queue and not self._stopping:
                self._lock.wait()
            deadline = time.monotonic() + self.batch_seconds
            while len(self._queue) < self.batch_size and not self._stopping:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._lock.wait(left)
            count = min(len(self._queue), self.batch_size)
            taken = [self._queue.popleft() for _ in range(count)]
            self._lock.notify_all()  # room again for a waiting network thread
            return taken

    def _run(self) -> None:
        try:
            while True:
                messages = self._take()
                if not messages:
                    if self._stopping:
                        return
                    continue
                self._write(messages)
        finally:
            connection.close()

    def _batch(self, messages: list[Incoming]) -> tuple[telemetry_services.Batch, int]:
        batch = telemetry_services.Batch()
        heartbeats = 0
        for message in messages:
            try:
                item = parse(message.topic, message.payload, message.received)
            except Rejected as exc:
                batch.rejected.append((message.topic, message.payload, str(exc)))
                continue
            if isinstance(item, Heartbeat):
                heartbeats += 1
            else:
                batch.readings.append(item)
            batch.alive.add(item.device_id)
        return batch, heartbeats

    def _store(
        self, messages: list[Incoming]
    ) -> tuple[list[dict[str, Any]], telemetry_services.Batch, int, int]:
        """One transaction: the deliveries recorded, then what was not stored before. Returns
        the latest values, the batch stored, its heartbeats and how many were repeats."""
        with transaction.atomic():
            deliveries = {id(m): d for m in messages if (d := m.delivery) is not None}
            repeats = telemetry_services.record_deliveries(list(deliveries.values()))
            fresh = [m for m in messages if deliveries.get(id(m)) not in repeats]
            batch, heartbeats = self._batch(fresh)
            latest = telemetry_services.store_batch(batch)
        return latest, batch, heartbeats, len(messages) - len(fresh)

    def _write(self, messages: list[Incoming]) -> None:
        delay = 0.5
        while True:
            try:
                if time.monotonic() - self._connection_checked >= CONNECTION_CHECK_SECONDS:
                    close_old_connections()
                    self._connection_checked = time.monotonic()
                latest, batch, heartbeats, repeats = self._store(messages)
                break
            except Exception:
                # The database is away: keep the batch (unacknowledged) and try again; the
                # queue fills meanwhile and the broker holds the rest.
                logger.exception("telemetry: could not store a batch of %d; retrying", len(messages))
                connection.close()
                time.sleep(delay)
                delay = min(delay * 2, RETRY_MAX_SECONDS)
        with self._acks:
            for message in messages:
                if message.qos and message.generation == message.source.generation:
                    message.source.ack(message.mid, message.qos)
        with self._lock:
            self.counters["stored"] += len(batch.readings)
            self.counters["rejected"] += len(batch.rejected)
            self.counters["heartbeats"] += heartbeats
            self.counters["batches"] += 1
            self.counters["repeats"] += repeats
        metrics.READINGS_STORED.inc(len(batch.readings))
        if batch.rejected:
            metrics.MESSAGES_REJECTED.inc(len(batch.rejected))
            self._prune_rejected(len(batch.rejected))
        try:
            self._on_stored(latest, batch.alive)
        except Exception:
            logger.exception("telemetry: could not pass on a stored batch")

    def _prune_rejected(self, count: int) -> None:
        self._rejections_since_prune += count
        if self._rejections_since_prune < min(PRUNE_EVERY_REJECTIONS, self.rejected_keep):
            return
        self._rejections_since_prune = 0
        try:
            telemetry_services.prune_rejected(self.rejected_keep)
        except Exception:
            logger.exception("telemetry: could not prune rejected messages")
