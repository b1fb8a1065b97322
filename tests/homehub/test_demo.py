"""Demo mode (`manage.py serve --demo`): a newcomer's first minute, and what it writes."""

import asyncio
import re
import signal
import socket
import subprocess
import time
from datetime import UTC, datetime, timedelta

import pytest
from asgiref.sync import async_to_sync
from django.db import connection

from automations.models import ZoneRoom
from automations.selectors import rooms
from devices.agents.models import Agent
from devices.telemetry.models import Sensor, TelemetryReading
from homehub.demo import broker as brokers
from homehub.demo.catalogue import AGENTS
from homehub.demo.climate import Room
from homehub.demo.services import HISTORY_SECONDS, prepare
from mcp_endpoint.auth.tokens import authenticate
from mcp_endpoint.models import AccessToken
from tests.conftest import free_port
from tests.hub_support import HubProcess
from tests.mcp_helpers import sdk_client
from tests.mqtt_support import wait_until

DEMO_IDS = [a.agent_id for a in AGENTS]
VOLUME = "02_00_00_de_00_01__self_audio_speaker_set_volume"
READ_SENSOR = "demo_office__read_sensor"


def _answers(url: str) -> bool:
    host, port = url.removeprefix("mqtt://").split(":")
    try:
        with socket.create_connection((host, int(port)), timeout=1):
            return True
    except OSError:
        return False


@pytest.mark.live
@pytest.mark.skipif(
    connection.vendor != "sqlite",
    reason="the demo runs on make demo's defaults (SQLite); on PostgreSQL, with the suite's other "
    "pass beside it, its Ctrl-C twice took longer than the test's 20 s (named in the README)",
)
def test_the_demo_lives_answers_an_llm_and_stops_on_ctrl_c(live_env):
    # No broker where MQTT_URL points: the demo starts its own Mosquitto.
    demo = HubProcess({**live_env, "MQTT_URL": f"mqtt://127.0.0.1:{free_port()}"}, serve_args=("--demo",))
    started = datetime.now(UTC)
    try:
        demo.start()
        banner = demo.output()
        token = re.search(r"MCP token:\s+(\S+)", banner).group(1)
        broker_url = re.search(r"on (mqtt://\S+) \(a private Mosquitto", banner).group(1)
        assert f"Dashboard:   {demo.base}/" in banner and '"mcpServers"' in banner
        assert "Automations: Intruder while armed, Last one out, Stuffy air" in banner

        wait_until(
            lambda: Agent.objects.filter(agent_id__in=DEMO_IDS, online=True).count() == len(DEMO_IDS),
            timeout=30,
            what="every demo agent online",
        )
        fresh = TelemetryReading.objects.filter(device_id__in=DEMO_IDS, received_at__gt=started)
        wait_until(
            lambda: set(fresh.values_list("device_id", flat=True)) == set(DEMO_IDS),
            timeout=30,
            what="live readings from every demo room",
        )
        volume, co2 = async_to_sync(_llm_calls)(demo.base, token)
    finally:
        demo.proc.send_signal(signal.SIGINT)  # Ctrl-C
        try:
            exit_code = demo.proc.wait(20)
        except subprocess.TimeoutExpired:
            demo.stop(kill=True)  # never left running to write into the next tests' database
            raise
        finally:
            demo.close()

    assert volume.is_error is False and volume.content[0].text == "true"
    assert co2.is_error is False and re.fullmatch(r"co2=\d+(\.\d+)?ppm", co2.content[0].text)
    week_ago = datetime.now(UTC) - timedelta(seconds=HISTORY_SECONDS - 3600)
    history = TelemetryReading.objects.filter(device_id__in=DEMO_IDS, measured_at__lt=week_ago)
    assert history.count() >= 4 * len(DEMO_IDS)  # the charts have a week to show at once
    assert exit_code == 0, demo.output()[-2000:]
    assert not _answers(broker_url)  # its private broker went with it


async def _llm_calls(base: str, token: str):
    async with sdk_client(base, token, timeout=30) as client:
        async with asyncio.timeout(30):  # online first, its tools discovered a moment later
            while not {VOLUME, READ_SENSOR} <= {t.name for t in (await client.list_tools()).tools}:
                await asyncio.sleep(0.2)
        return (
            await client.call_tool(VOLUME, {"volume": 30}),
            await client.call_tool(READ_SENSOR, {"channel": "co2"}),
        )


def test_starting_the_demo_again_writes_nothing_twice(transactional_db):
    now = time.time()
    tokens, first = prepare(AGENTS, UTC)
    rows = TelemetryReading.objects.count()
    again_tokens, second = prepare(AGENTS, UTC)

    assert Agent.objects.filter(agent_id__in=DEMO_IDS).count() == len(DEMO_IDS)
    assert set(tokens) == set(again_tokens) == {a.agent_id for a in AGENTS if a.transport == "ws"}
    assert authenticate(first) is None and authenticate(second) is not None  # the old token revoked
    assert AccessToken.objects.filter(name="demo", revoked=False).count() == 1
    assert TelemetryReading.objects.count() - rows <= 4 * len(DEMO_IDS)  # at most the newest slot
    assert rows >= len(DEMO_IDS) * 4 * (HISTORY_SECONDS // 600 - 1)
    assert Sensor.objects.filter(device_id__in=DEMO_IDS).count() == 4 * len(DEMO_IDS)
    assert Sensor.objects.filter(measured_at__gt=datetime.fromtimestamp(now - 900, UTC)).count() == 16
    # the demo's zones and agents are in rooms, once
    salon = next(r for r in rooms()["rooms"] if r["name"] == "Salón")
    assert salon["zones"] == ["living_room"] and [d["agent_id"] for d in salon["devices"]] == [
        "02:00:00:de:00:01"
    ]
    assert {s["zone"] for s in salon["sensors"]} == {"living_room"}
    assert ZoneRoom.objects.count() == len(DEMO_IDS)


def test_the_climate_is_plausible_and_follows_the_day():
    room = Room("r1", "lab")
    day = [room.value("temperature", 1_700_000_000 + h * 3600) for h in range(24 * 7)]
    co2 = [room.value("co2", 1_700_000_000 + h * 3600) for h in range(24 * 7)]
    humidity = [room.value("humidity", 1_700_000_000 + h * 3600) for h in range(24 * 7)]
    assert min(day) > 15 and max(day) < 28 and max(day) - min(day) > 2
    assert min(co2) > 380 and max(co2) < 1500 and max(co2) - min(co2) > 150
    assert min(humidity) >= 20 and max(humidity) <= 80
    afternoons = [t for h, t in enumerate(day) if (h + 1_700_000_000 // 3600) % 24 == 15]
    nights = [t for h, t in enumerate(day) if (h + 1_700_000_000 // 3600) % 24 == 4]
    assert sum(afternoons) / 7 > sum(nights) / 7 + 1.5  # warmer mid-afternoon than before dawn
    assert room.value("temperature", 1_700_000_000) == room.value("temperature", 1_700_000_000)


def test_without_a_broker_or_mosquitto_the_demo_says_so(monkeypatch):
    monkeypatch.setattr(brokers, "_mosquitto", lambda: None)
    found = brokers.find_or_start(f"mqtt://127.0.0.1:{free_port()}")
    assert found.url is None and found.address is None
    assert "no mosquitto binary" in found.how


def test_a_tls_broker_at_mqtt_url_is_left_alone_for_a_private_one():
    """The demo's agents speak plain MQTT: something answering at an mqtts:// URL is not used."""
    import socket

    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        port = listening.getsockname()[1]
        found = brokers.find_or_start(f"mqtts://127.0.0.1:{port}")
    try:
        assert found.url != f"mqtts://127.0.0.1:{port}"
        if found.url is not None:  # a private Mosquitto (the machine has the binary)
            assert found.url.startswith("mqtt://") and found.address[1] != port
    finally:
        found.stop()


def test_without_a_broker_the_rooms_readings_are_stored_directly(transactional_db, monkeypatch):
    from homehub.demo import agents

    monkeypatch.setattr(agents, "READING_SECONDS", 0.05)
    sensors = agents.RoomSensors([Room("r2", "lab")], UTC, broker=None)
    sensors.start()
    try:
        wait_until(lambda: TelemetryReading.objects.filter(device_id="r2").count() >= 8, what="readings")
    finally:
        sensors.stop()
    assert set(Sensor.objects.filter(device_id="r2").values_list("channel", flat=True)) == {
        "temperature",
        "humidity",
        "co2",
        "presence",
    }
