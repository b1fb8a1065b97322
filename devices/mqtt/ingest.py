"""Telemetry from the broker to the database, in batches, without losing any.

paho's network thread only queues each message (`offer`); a writer thread takes up to
`batch_size` messages, or what came within `batch_seconds` of the first, parses them,
stores them in one transaction (`telemetry_services.store_batch`) and only then
acknowledges the QoS 1 ones, so a crash or a database outage loses nothing: the broker
redelivers what was never acknowledged, and the unique constraint ignores a reading
stored twice. The queue is bounded: when it is full the network thread waits, the broker
stops sending (TCP and MQTT flow control) and queues for us instead.

Acknowledgements belong to one connection: message ids restart on each one. Messages of
a lost connection are neither acknowledged nor kept (QoS 1 ones come back); the
`generation` counter tells them apart.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db import close_old_connections, connection

from devices import metrics, telemetry_services
from devices.telemetry_parsing import Heartbeat, Rejected, parse

logger = logging.getLogger(__name__)

RETRY_MAX_SECONDS = 10.0
PRUNE_EVERY_REJECTIONS = 500

Ack = Callable[[int, int], None]
Stored = Callable[[list[dict[str, Any]], set[str]], None]


@dataclass(slots=True)
class Incoming:
    topic: str
    payload: bytes
    mid: int
    qos: int
    generation: int
    received: float


class Ingestor:
    def __init__(
        self,
        ack: Ack,
        on_stored: Stored,
        *,
        batch_size: int,
        batch_seconds: float,
        queue_limit: int,
        rejected_keep: int,
    ) -> None:
        self._ack = ack
        self._on_stored = on_stored
        self.batch_size = max(1, batch_size)
        self.batch_seconds = batch_seconds
        self.queue_limit = max(queue_limit, self.batch_size)
        self.rejected_keep = rejected_keep
        self._queue: deque[Incoming] = deque()
        self._lock = threading.Condition()
        self._stopping = False
        self._thread: threading.Thread | None = None
        self.generation = 0
        self.counters = {"received": 0, "stored": 0, "rejected": 0, "heartbeats": 0, "batches": 0}
        self._rejections_since_prune = 0

    # --- paho's network thread -------------------------------------------------------------

    def offer(self, topic: str, payload: bytes, mid: int, qos: int) -> None:
        incoming = Incoming(topic, payload, mid, qos, self.generation, time.time())
        with self._lock:
            while len(self._queue) >= self.queue_limit and not self._stopping:
                self._lock.wait(0.5)  # backpressure: stop reading until the writer catches up
            self._queue.append(incoming)
            self.counters["received"] += 1
            if len(self._queue) == 1 or len(self._queue) >= self.batch_size:
                self._lock.notify_all()

    def connection_lost(self) -> None:
        """Forget the lost connection's unacknowledged messages: the broker sends them again."""
        with self._lock:
            self.generation += 1
            kept = deque(m for m in self._queue if m.qos == 0)
            self._queue = kept

    @property
    def backlog(self) -> int:
        return len(self._queue)

    # --- the writer thread ---------------------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="mqtt-ingest", daemon=True)
        self._thread.start()

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

    def _write(self, messages: list[Incoming]) -> None:
        batch, heartbeats = self._batch(messages)
        delay = 0.5
        while True:
            try:
                close_old_connections()
                latest = telemetry_services.store_batch(batch)
                break
            except Exception:
                # The database is away: keep the batch (unacknowledged) and try again; the
                # queue fills meanwhile and the broker holds the rest.
                logger.exception("telemetry: could not store a batch of %d; retrying", len(messages))
                connection.close()
                time.sleep(delay)
                delay = min(delay * 2, RETRY_MAX_SECONDS)
        with self._lock:
            generation = self.generation
            for message in messages:
                if message.qos and message.generation == generation:
                    self._ack(message.mid, message.qos)
            self.counters["stored"] += len(batch.readings)
            self.counters["rejected"] += len(batch.rejected)
            self.counters["heartbeats"] += heartbeats
            self.counters["batches"] += 1
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
