"""`telemetry_services.store_batch` writes readings with one prepared INSERT (rows the ORM reads
back exactly, equal readings all kept), and `record_deliveries` tells a broker's repeat of a
stored message from a new one by its session, packet id and digest."""

from datetime import UTC, datetime

import pytest

from devices.telemetry import services as telemetry_services
from devices.telemetry.models import MqttDelivery, RejectedMessage, Sensor, TelemetryReading
from devices.telemetry.parsing import Reading
from devices.telemetry.services import Delivery, record_deliveries

pytestmark = pytest.mark.django_db

AT = 1715840000.123


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


def test_readings_with_the_same_time_and_value_are_all_kept():
    """Two readings are two readings: only a broker's repeat of one message is not stored again."""
    store(reading(), reading(25.0, AT + 1))
    store(reading(25.0, AT + 1), reading(26.0, AT + 2))
    assert TelemetryReading.objects.count() == 4
    assert TelemetryReading.objects.filter(value=25.0).count() == 2


def delivery(packet_id: int, payload: bytes, *, repeat: bool, session: str = "w1") -> Delivery:
    return Delivery(session, packet_id, telemetry_services.message_digest("office/t", payload), repeat)


def test_a_repeat_of_a_stored_message_is_recognised_and_nothing_else_is():
    assert record_deliveries([delivery(1, b"20", repeat=False), delivery(2, b"21", repeat=False)]) == set()
    again = delivery(1, b"20", repeat=True)
    assert record_deliveries([again]) == {again}  # stored before: not again
    assert record_deliveries([delivery(3, b"22", repeat=True)]) == set()  # sent before, never stored
    assert record_deliveries([delivery(2, b"other", repeat=True)]) == set()  # the id reused for another
    assert record_deliveries([delivery(1, b"20", repeat=True, session="w2")]) == set()  # another session
    # A first delivery reuses an acknowledged id: the row now stands for the new message.
    assert record_deliveries([delivery(1, b"30", repeat=False)]) == set()
    assert record_deliveries([delivery(1, b"30", repeat=True)]) == {delivery(1, b"30", repeat=True)}
    assert MqttDelivery.objects.count() == 4  # one row per session and packet id


def test_rejected_messages_are_kept_beside_readings():
    batch = telemetry_services.Batch(
        readings=[reading()], rejected=[("office/x", b"{oops", "payload is not JSON")]
    )
    telemetry_services.store_batch(batch)
    assert TelemetryReading.objects.count() == 1
    assert RejectedMessage.objects.get().reason == "payload is not JSON"
