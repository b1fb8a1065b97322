"""The telemetry tools LLM agents read sensors with: latest values and a sensor's history."""

from datetime import timedelta

import pytest
from asgiref.sync import async_to_sync
from django.utils import timezone

from devices.telemetry.models import TelemetryReading
from tests.mcp_helpers import Peer
from tests.telemetry_support import store_readings

pytestmark = pytest.mark.django_db(transaction=True)


def call(name, arguments):
    async def scenario():
        peer = Peer(scopes={"read"})
        await peer.initialize()
        return await peer.call(name, arguments)

    return async_to_sync(scenario)()["result"]


@pytest.fixture
def sensors(db):
    now = timezone.now()
    rows = [
        TelemetryReading(
            zone="lab",
            device_type="sensor",
            device_id="env_01",
            channel="temperature",
            value=20 + i,
            unit="c",
            measured_at=now - timedelta(minutes=10 * i),
        )
        for i in range(12)
    ]
    rows.append(
        TelemetryReading(
            zone="hall",
            device_type="sensor",
            device_id="env_02",
            channel="co2",
            value=0,
            unit="ppm",
            measured_at=now,
        )
    )
    store_readings(rows)


def test_latest_values_of_every_sensor_or_one_zone(sensors):
    every = call("get_sensor_values", {})["structuredContent"]["sensors"]
    assert {(s["path"], s["value"]) for s in every} == {
        ("lab/sensor/env_01/temperature", 20.0),
        ("hall/sensor/env_02/co2", 0.0),
    }
    hall = call("get_sensor_values", {"zone": "hall"})["structuredContent"]["sensors"]
    assert [s["path"] for s in hall] == ["hall/sensor/env_02/co2"]


def test_history_oldest_first_within_the_range(sensors):
    result = call("get_sensor_history", {"path": "lab/sensor/env_01/temperature", "range": "hour"})
    points = result["structuredContent"]["points"]
    assert [p["value"] for p in points] == [25.0, 24.0, 23.0, 22.0, 21.0, 20.0]  # 50..0 minutes ago
    assert result["structuredContent"]["unit"] == "c"


def test_unknown_sensor_is_an_error_the_model_can_act_on(sensors):
    result = call("get_sensor_history", {"path": "lab/sensor/nope/temperature"})
    assert result["isError"] and "get_sensor_values" in result["content"][0]["text"]
