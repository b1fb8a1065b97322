"""The agents' own writes, against the real database."""

import pytest

from devices.agents import services
from devices.agents.models import Agent

pytestmark = pytest.mark.django_db


def test_a_device_heard_from_on_mqtt_was_last_seen_now_online_or_not():
    offline = Agent.objects.create(agent_id="esp32_07", online=False)
    services.heard_from(["esp32_07", "a-sensor-that-is-no-agent"])
    offline.refresh_from_db()
    assert offline.last_seen is not None and offline.online is False
    assert Agent.objects.count() == 1  # a telemetry device is not made an agent
