"""`telemetry_services.store_batch` writes readings with one prepared INSERT: rows the ORM
reads back exactly, a redelivered reading skipped, and ORM-written rows recognised as the
same reading (the same datetime representation in the unique constraint)."""

from datetime import UTC, datetime

import pytest

from devices import telemetry_services
from devices.models import RejectedMessage, Sensor, TelemetryReading
from devices.telemetry_parsing import Reading

pytestmark = pytest.mark.django_db

AT = 1715840000.123  # milliseconds matter: they are part of the reading's identity


def reading(value: float = 24.5, at: float = AT, channel: str = "temperature") -> Reading:
    return Reading("lab", "sensor", "env_01", channel, value, "c", at)


def store(*readings: Reading) -> list:
    return telemetry_services.store_batch(telemetry_services.Batch(readings=list(readings)))


def test_rows_read_back_as_stored():
    store(reading(), reading(0.0, AT + 1), reading(41.5, AT, "humidity"))
    rows = list(TelemetryReading.objects.order_by("measured_at", "channel"))
    assert [(r.channel, r.value, r.unit) for r in rows] == [
        ("humidity", 41.5, "c"),
        ("temperature", 24.5, "c"),
        ("temperature", 0.0, "c"),
    ]
    assert rows[0].measured_at == datetime.fromtimestamp(AT, UTC)
    assert rows[0].received_at is not None
    assert TelemetryReading.objects.filter(measured_at=datetime.fromtimestamp(AT + 1, UTC)).count() == 1
    assert Sensor.objects.get(channel="temperature").value == 0.0


def test_a_redelivered_reading_is_not_stored_twice():
    store(reading(), reading(25.0, AT + 1))
    store(reading(25.0, AT + 1), reading(26.0, AT + 2))  # one old, one new
    assert TelemetryReading.objects.count() == 3


def test_a_row_written_by_the_orm_is_the_same_reading():
    TelemetryReading.objects.create(
        zone="lab",
        device_type="sensor",
        device_id="env_01",
        channel="temperature",
        value=24.5,
        unit="c",
        measured_at=datetime.fromtimestamp(AT, UTC),
    )
    store(reading())
    assert TelemetryReading.objects.count() == 1


def test_rejected_messages_are_kept_beside_readings():
    batch = telemetry_services.Batch(
        readings=[reading()], rejected=[("office/x", b"{oops", "payload is not JSON")]
    )
    telemetry_services.store_batch(batch)
    assert TelemetryReading.objects.count() == 1
    assert RejectedMessage.objects.get().reason == "payload is not JSON"
