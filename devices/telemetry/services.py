"""The only code that writes telemetry: readings in batches, each sensor's latest value,
devices' `last_seen`, rejected messages, the deliveries that tell a broker's repeat from a new
message, and pruning.

The MQTT worker stores a batch in one transaction (`record_deliveries`, then `store_batch`)
and acknowledges its messages to the broker only after the commit, so a crash loses nothing;
a message the broker sends again because its acknowledgement never arrived is recognised by
its session and packet id and acknowledged without being stored twice. Readings themselves
have no uniqueness: two of a sensor with the same time and value are two readings.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from itertools import chain
from typing import Any

from django.db import connection, transaction
from django.db.models import Field, Model
from django.utils import timezone
from django.utils.translation import gettext

from audit.services import record_event
from common.labels import LabelError, tidy_label
from common.pruning import delete_in_chunks
from common.storable import storable_text
from devices.telemetry.models import MqttDelivery, RejectedMessage, Sensor, TelemetryReading
from devices.telemetry.parsing import Reading, describe
from devices.telemetry.selectors import SensorKey

MAX_TOPIC_CHARS = 255
# Rows per INSERT, each statement run for a whole batch by `executemany`. psycopg keeps its
# parse of a statement of at most 50 parameters (a longer one it splits in Python on every
# call: a fifth of the writer's time on PostgreSQL with a batch's deliveries in one), and with
# client-side binding PostgreSQL parses every statement it is sent: four readings a statement
# take it a third less time. SQLite pays ~3 µs a reading more for four rows than for one
# (docs/PERFORMANCE.md, "MQTT ingestion, round two").
DELIVERIES_PER_STATEMENT = 16  # 48 parameters
READINGS_PER_STATEMENT = 4  # 32 parameters


@dataclass(slots=True)
class Batch:
    """What one batch of messages brought."""

    readings: list[Reading] = field(default_factory=list)
    alive: set[str] = field(default_factory=set)  # device ids heard from: the ingest hands them on
    rejected: list[tuple[str, bytes, str]] = field(default_factory=list)  # (topic, payload, reason)


@dataclass(frozen=True, slots=True)
class Delivery:
    """How one QoS 1 message reached the hub: the broker session it came through (the MQTT
    client id), its packet id, a digest of its topic and payload, and whether the broker
    flagged it as possibly sent before (DUP)."""

    session: str
    packet_id: int
    digest: int
    repeat: bool


def message_digest(topic: str, payload: bytes) -> int:
    """64 bits of a hash of topic and payload, as a signed integer (a BIGINT column)."""
    hashed = hashlib.blake2b(topic.encode("utf-8", "surrogatepass") + b"\0" + payload, digest_size=8)
    return int.from_bytes(hashed.digest(), "big", signed=True)


def _column(model: type[Model], name: str) -> str:
    """The database column of a concrete field of `model`."""
    found = model._meta.get_field(name)
    assert isinstance(found, Field) and found.column is not None
    return found.column


def _insert_rows(
    cursor: Any, statement: Callable[[int], str], rows: Sequence[tuple[Any, ...]], per_statement: int
) -> None:
    """Insert `rows` with `statement(n)`, an INSERT of n rows: full statements of
    `per_statement` rows by one `executemany`, then one statement for the rest."""
    whole = len(rows) - len(rows) % per_statement
    if whole:
        cursor.executemany(
            statement(per_statement),
            [
                tuple(chain.from_iterable(rows[start : start + per_statement]))
                for start in range(0, whole, per_statement)
            ],
        )
    if whole < len(rows):
        cursor.execute(statement(len(rows) - whole), tuple(chain.from_iterable(rows[whole:])))


def record_deliveries(deliveries: Sequence[Delivery]) -> set[Delivery]:
    """Record that these messages are being stored, inside the transaction that stores them,
    and return those that were stored before: repeats (DUP) whose session and packet id are
    recorded with the same digest. A message sent for the first time replaces what its packet
    id held (the broker reuses an id only once the earlier message was acknowledged).

    On PostgreSQL a repeat that another worker is storing at this moment waits here for that
    transaction and then counts as stored; SQLite has one writer at a time anyway."""
    meta = MqttDelivery._meta
    quote = connection.ops.quote_name
    table = quote(meta.db_table)
    session, packet_id, digest = (
        quote(_column(MqttDelivery, name)) for name in ("session", "packet_id", "digest")
    )

    def upsert(rows: int) -> str:
        values = ", ".join(["(%s, %s, %s)"] * rows)
        return (
            f"INSERT INTO {table} ({session}, {packet_id}, {digest}) VALUES {values} "
            f"ON CONFLICT ({session}, {packet_id}) DO UPDATE SET {digest} = excluded.{digest}"
        )

    # First deliveries in multi-row statements, cheaper than a statement per row on PostgreSQL
    # (a statement may not touch a row twice: one per session and packet id, the last).
    fresh = {(d.session, d.packet_id): (d.session, d.packet_id, d.digest) for d in deliveries if not d.repeat}
    stored: set[Delivery] = set()
    with connection.cursor() as cursor:
        _insert_rows(cursor, upsert, list(fresh.values()), DELIVERIES_PER_STATEMENT)
        for d in deliveries:
            if d.repeat:
                cursor.execute(
                    f"{upsert(1)} WHERE {table}.{digest} <> excluded.{digest} RETURNING {packet_id}",
                    (d.session, d.packet_id, d.digest),
                )
                if cursor.fetchone() is None:
                    stored.add(d)
    return stored


def _when(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def _newest_per_sensor(readings: Iterable[Reading]) -> dict[tuple[str, str, str, str], Reading]:
    newest: dict[tuple[str, str, str, str], Reading] = {}
    for reading in readings:
        key = reading.sensor
        known = newest.get(key)
        if known is None or reading.measured_at >= known.measured_at:
            newest[key] = reading
    return newest


def _upsert_sensors(latest: Sequence[Reading]) -> None:
    """Each sensor's row takes the batch's newest reading unless it already holds a newer one
    (readings arrive out of order across workers and redeliveries)."""
    table = connection.ops.quote_name(Sensor._meta.db_table)
    sql = (
        f"INSERT INTO {table} (zone, device_type, device_id, channel, value, unit, measured_at) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s) "
        "ON CONFLICT (zone, device_type, device_id, channel) DO UPDATE SET "
        "value = excluded.value, unit = excluded.unit, measured_at = excluded.measured_at "
        f"WHERE excluded.measured_at >= {table}.measured_at"
    )
    with connection.cursor() as cursor:
        cursor.executemany(
            sql,
            [
                (r.zone, r.device_type, r.device_id, r.channel, r.value, r.unit, _when(r.measured_at))
                for r in latest
            ],
        )


def _insert_readings(readings: Sequence[Reading], now: datetime) -> None:
    """A few readings a statement, one statement run for them all (`executemany`). Values go
    through the backend's own datetime adaptation, so rows are the same as the ORM would write;
    what is skipped is building a model instance and compiling SQL per row, most of a batch's
    cost."""
    meta = TelemetryReading._meta
    quote = connection.ops.quote_name
    fields = ("zone", "device_type", "device_id", "channel", "value", "unit", "measured_at", "received_at")
    columns = [_column(TelemetryReading, name) for name in fields]
    head = f"INSERT INTO {quote(meta.db_table)} ({', '.join(map(quote, columns))}) VALUES "
    row = f"({', '.join(['%s'] * len(columns))})"

    def insert(rows: int) -> str:
        return head + ", ".join([row] * rows)

    adapt = connection.ops.adapt_datetimefield_value
    received = adapt(now)
    rows = [(*r.sensor, r.value, r.unit, adapt(_when(r.measured_at)), received) for r in readings]
    with connection.cursor() as cursor:
        _insert_rows(cursor, insert, rows, READINGS_PER_STATEMENT)


def store_batch(batch: Batch) -> list[dict[str, Any]]:
    """Store a batch in one transaction; returns the latest reading of each sensor it touched
    (for the dashboard's live view)."""
    now = timezone.now()
    latest = list(_newest_per_sensor(batch.readings).values())
    # Inside the worker's transaction (its deliveries), no savepoint: a failure rolls back the
    # whole batch anyway, and a savepoint is two more statements per batch.
    with transaction.atomic(savepoint=False):
        if batch.readings:
            _insert_readings(batch.readings, now)
            _upsert_sensors(latest)
        if batch.rejected:
            RejectedMessage.objects.bulk_create(
                RejectedMessage(
                    topic=storable_text(topic[:MAX_TOPIC_CHARS]),
                    payload=describe(payload),
                    reason=storable_text(reason[:200]),
                )
                for topic, payload, reason in batch.rejected
            )
    return [
        {
            "path": "/".join(r.sensor),
            "value": r.value,
            "unit": r.unit,
            "measured_at": _when(r.measured_at).isoformat(),
        }
        for r in latest
    ]


def prune_rejected(keep: int) -> int:
    """Keep only the newest `keep` rejected messages."""
    newest = RejectedMessage.objects.order_by("-id").values_list("id", flat=True)[keep : keep + 1]
    boundary = next(iter(newest), None)
    if boundary is None:
        return 0
    deleted, _ = RejectedMessage.objects.filter(id__lte=boundary).delete()
    return deleted


def prune_telemetry(older_than: timedelta) -> int:
    """Delete readings measured before now - `older_than`, in short transactions. Each
    sensor's latest value stays."""
    return delete_in_chunks(TelemetryReading.objects.filter(measured_at__lt=timezone.now() - older_than))


def set_sensor_label(key: SensorKey, label: str, *, actor: str, interface: str) -> str:
    """Name a sensor as the household calls it (blank: back to the name made from its room and
    channel). One transaction with its audit event; the stripped label is returned."""
    label = tidy_label(label)
    with transaction.atomic():
        sensor = Sensor.objects.select_for_update().filter(key.filter()).first()
        if sensor is None:
            raise LabelError(gettext("sensor: no sensor %(path)s.") % {"path": key.path})
        if sensor.label != label:
            before = sensor.label
            sensor.label = label
            sensor.save(update_fields=["label"])
            record_event(
                actor=actor,
                interface=interface,
                action="sensor.label",
                target=f"sensor:{key.path}",
                before={"label": before},
                after={"label": label},
            )
    return label
