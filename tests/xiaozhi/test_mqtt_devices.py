"""Stock xiaozhi devices in MQTT mode (devices/xiaozhi/mqtt/) against a live `serve`: the
device listener, the firmware-faithful MQTT simulator, calls from `/mcp` and the dashboard,
and what a device may not do: read another's deliveries, publish on its topic, connect with
wrong credentials, take another's connection over."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import paho.mqtt.client as mqtt
import pytest
from asgiref.sync import async_to_sync, sync_to_async
from paho.mqtt.enums import CallbackAPIVersion

from audit.models import Event
from devices.agents.models import Agent, AgentTool
from devices.agents.services import register_agent
from devices.xiaozhi.mqtt.simulator import ConnectRefused, SimulatedMqttDevice
from devices.xiaozhi.mqtt_config import mqtt_section
from tests.agents.test_devices_gateway import http_call, http_request
from tests.conftest import free_port
from tests.devices_support import dashboard_call, eventually, hub
from tests.hub_support import running_hub

pytestmark = pytest.mark.live
FIRST, SECOND = "aa:bb:cc:00:18:01", "aa:bb:cc:00:18:02"
VOLUME = "aa_bb_cc_00_18_01__self_audio_speaker_set_volume"


@contextlib.contextmanager
def mqtt_hub(env: dict[str, str], settings, **extra: str) -> Iterator[str]:
    """`serve` with the device listener on a free loopback port (and no MQTT worker: no broker
    is needed for devices); the test process hands out the same endpoint in OTA sections."""
    port = free_port()
    settings.DEVICE_MQTT_ENDPOINT = f"127.0.0.1:{port}"
    with running_hub(
        {**env, "MCP_RATE_LIMIT": "0"},
        serve_args=("--no-mqtt",),
        DEVICE_MQTT_ENDPOINT=f"127.0.0.1:{port}",
        DEVICE_MQTT_LISTEN=f"127.0.0.1:{port}",
        **extra,
    ) as process:
        deadline = time.monotonic() + 10
        while not _answers(port):
            assert time.monotonic() < deadline, process.output()[-2000:]
            time.sleep(0.05)
        yield process.base


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def ota_section(agent_id: str) -> dict[str, Any]:
    """Register the device and mint its MQTT section, as its OTA answer would."""
    agent, _ = register_agent(agent_id, transport="ws", actor="test", interface=Event.Interface.SYSTEM)
    section = mqtt_section(agent)
    assert section is not None
    return section


@sync_to_async
def tool_rows(agent_id: str) -> list[tuple[str, bool]]:
    return list(
        AgentTool.objects.filter(agent__agent_id=agent_id).order_by("name").values_list("name", "available")
    )


@sync_to_async
def online(agent_id: str) -> bool:
    return Agent.objects.get(agent_id=agent_id).online


@sync_to_async
def offline(agent_id: str) -> bool:
    return not Agent.objects.get(agent_id=agent_id).online


class Intruder:
    """A plain MQTT client with a device's valid credentials that tries what stock firmware never
    does: subscribe, and publish on another device's topic."""

    def __init__(self, section: dict[str, Any]) -> None:
        self.section = section
        self.heard: list[tuple[str, bytes]] = []
        self.granted: list[int] = []
        self.subscribed = threading.Event()
        self.client = mqtt.Client(
            CallbackAPIVersion.VERSION2, client_id=section["client_id"], protocol=mqtt.MQTTv311
        )
        self.client.username_pw_set(section["username"], section["password"])
        self.client.on_message = lambda c, u, m: self.heard.append((m.topic, bytes(m.payload)))

        def on_subscribe(client, userdata, mid, codes, properties):
            self.granted = [code.value for code in codes]
            self.subscribed.set()

        self.client.on_subscribe = on_subscribe

    def connect(self) -> None:
        host, _, port = self.section["endpoint"].rpartition(":")
        self.client.connect(host, int(port), keepalive=30)
        self.client.loop_start()

    def subscribe(self, *topics: str) -> list[int]:
        self.subscribed.clear()
        self.client.subscribe([(topic, 0) for topic in topics])
        assert self.subscribed.wait(5)
        return self.granted

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


def connect_code(section: dict[str, Any], *, clean: bool = True, **changes: str) -> int:
    """The CONNACK code a plain client gets with these credentials changed (`clean`: a clean
    session, or a persistent one, which amqtt would take over from a connected client)."""
    given = {**section, **changes}
    answer: list[int] = []
    done = threading.Event()
    client = mqtt.Client(
        CallbackAPIVersion.VERSION2, client_id=given["client_id"], protocol=mqtt.MQTTv311, clean_session=clean
    )
    client.username_pw_set(given["username"], given["password"])

    def on_connect(client, userdata, flags, code, properties):
        answer.append(code.value)
        done.set()

    client.on_connect = on_connect
    host, _, port = section["endpoint"].rpartition(":")
    client.connect(host, int(port), keepalive=30)
    client.loop_start()
    try:
        assert done.wait(5)
    finally:
        client.disconnect()
        client.loop_stop()
    return answer[0]


def test_a_device_in_mqtt_mode_is_discovered_and_called_from_mcp_and_the_dashboard(
    live_env, settings, make_token, django_user_model
):
    django_user_model.objects.create_superuser("boss", "boss@example.com", "pw-for-tests-only")
    token = make_token(name="llm")
    with mqtt_hub(live_env, settings) as base:
        section = ota_section(FIRST)
        device = SimulatedMqttDevice(section, page_bytes=700)

        async def scenario():
            await device.connect()  # no hello: the hub initializes it at once
            tools = await eventually(lambda: tool_rows(FIRST), timeout=10)
            over_mcp = await sync_to_async(http_call)(base, token, VOLUME, {"volume": 35})
            form = await sync_to_async(dashboard_call)(
                base, FIRST, "self.screen.set_brightness", **{"arg-brightness": "15"}
            )
            hello = await device.open_conversation()
            after_hello = await sync_to_async(http_call)(base, token, VOLUME, {"volume": 36})
            await device.close_conversation()
            after_goodbye = await sync_to_async(http_call)(base, token, VOLUME, {"volume": 37})
            await device.close()
            await eventually(lambda: offline(FIRST))
            return tools, over_mcp, form, hello, after_hello, after_goodbye

        tools, over_mcp, form, hello, after_hello, after_goodbye = async_to_sync(scenario)()

    assert [name for name, _ in tools] == sorted(t.name for t in device.tools)
    methods = [p.get("method") for p in device.received if "method" in p]
    assert methods[0] == "initialize" and methods.count("tools/list") >= 3  # pages of 700 bytes
    assert over_mcp == {"content": [{"type": "text", "text": "true"}], "isError": False}
    assert form.status_code == 200 and form.json()["result"]["content"][0]["text"] == "true"
    assert device.state.brightness == 15 and device.state.volume == 37
    assert after_hello["isError"] is False and after_goodbye["isError"] is False
    assert hello["transport"] == "udp" and len(hello["session_id"]) == 32
    assert hello["audio"]["supported"] is False and "no audio" in hello["audio"]["reason"]
    assert "udp" not in hello  # no audio channel is offered
    connect = Event.objects.get(action="agent.connect")
    assert connect.after["transport"] == "mqtt" and connect.after["client_id"] == section["client_id"]
    assert connect.after["keepalive"] == 240
    assert Event.objects.filter(action="agent.disconnect").count() == 1
    assert [available for _, available in async_to_sync(tool_rows)(FIRST)] == [False] * len(tools)
    calls = Event.objects.filter(action="agent.call").order_by("id")
    assert [(e.interface, e.before["tool"]) for e in calls][:2] == [
        ("mcp-http", "self.audio_speaker.set_volume"),
        ("dashboard", "self.screen.set_brightness"),
    ]


def test_a_second_device_can_neither_read_the_first_ones_deliveries_nor_publish_as_it(live_env, settings):
    with mqtt_hub(live_env, settings):
        first = SimulatedMqttDevice(ota_section(FIRST))
        second = Intruder(ota_section(SECOND))

        async def scenario():
            await first.connect()
            await eventually(lambda: tool_rows(FIRST), timeout=10)
            await sync_to_async(second.connect)()
            granted = await sync_to_async(second.subscribe)(
                f"devices/p2p/{first.agent_id}", "devices/p2p/+", "#", f"devices/up/{first.agent_id}"
            )
            own = await sync_to_async(second.subscribe)(f"devices/p2p/{second.section['client_id']}")
            # On the first device's topic, as if it were the first device: a notification and a hello.
            forged = {"jsonrpc": "2.0", "method": "notifications/forged", "params": {}}
            for message in (
                {"session_id": "", "type": "mcp", "payload": forged},
                {"type": "hello", "version": 3, "transport": "udp"},
            ):
                second.client.publish(first.section["publish_topic"], json.dumps(message), qos=0)
            heard_before = len(first.heard)
            await first.open_conversation()  # traffic on the first device's deliveries
            await first.notify("notifications/genuine", {})
            await eventually(_notified("notifications/genuine"))
            await asyncio.sleep(0.5)
            second.close()
            await first.close()
            return granted, own, heard_before

        granted, own, heard_before = async_to_sync(scenario)()

    assert granted == [0x80, 0x80, 0x80, 0x80] and own == [0]
    # Only its own deliveries (the hub initializes it too): none of the first device's.
    assert {topic for topic, _ in second.heard} == {f"devices/p2p/{second.section['client_id']}"}
    assert [m["type"] for m in first.heard[heard_before:]] == ["hello"]  # one hello: the first's own
    assert not Event.objects.filter(action="agent.notification", after__method="notifications/forged")


def _notified(method: str):
    @sync_to_async
    def check() -> bool:
        return Event.objects.filter(action="agent.notification", after__method=method).exists()

    return check


def test_wrong_credentials_are_refused_and_cannot_take_a_device_over(live_env, settings, make_token):
    token = make_token(name="llm")
    with mqtt_hub(live_env, settings) as base:
        section = ota_section(FIRST)
        device = SimulatedMqttDevice(section)

        async def scenario():
            await device.connect()
            await eventually(lambda: tool_rows(FIRST), timeout=10)
            # With the device's client id and a wrong password, in a clean session (amqtt alone would
            # leave the device connected but deaf) and a persistent one (it would disconnect it).
            codes = {
                "password": await sync_to_async(connect_code)(section, password="not-the-password"),
                "persistent": await sync_to_async(connect_code)(section, clean=False, password="nope"),
                "username": await sync_to_async(connect_code)(section, username="someone-else"),
                "client_id": await sync_to_async(connect_code)(section, client_id="nobody"),
            }
            stale = SimulatedMqttDevice(dict(section, password="an-older-password"))
            with contextlib.suppress(ConnectRefused):
                await stale.connect()
                raise AssertionError("a wrong password connected")
            still = await sync_to_async(http_call)(base, token, VOLUME, {"volume": 12})
            await device.close()
            return codes, still

        codes, still = async_to_sync(scenario)()

    # MQTT 3.1.1's "bad user name or password" (paho reports it as MQTT 5's 134).
    assert codes == {"password": 134, "persistent": 134, "username": 134, "client_id": 134}
    assert still == {"content": [{"type": "text", "text": "true"}], "isError": False}
    assert device.state.volume == 12
    assert Event.objects.filter(action="agent.connect").count() == 1
    assert Event.objects.filter(action="agent.disconnect").count() == 1  # its own close, at the end


def test_a_device_that_falls_silent_goes_offline(live_env, settings):
    settings.DEVICE_MQTT_KEEPALIVE_SECONDS = 1
    with mqtt_hub(live_env, settings):
        device = SimulatedMqttDevice(ota_section(FIRST))

        async def scenario():
            await device.connect()
            await eventually(lambda: tool_rows(FIRST), timeout=10)
            alive = await online(FIRST)
            await asyncio.sleep(2.5)  # pinging every second: still there
            still = await online(FIRST)
            await device.vanish()
            started = time.monotonic()
            await eventually(lambda: offline(FIRST), timeout=10)
            return alive, still, time.monotonic() - started

        alive, still, took = async_to_sync(scenario)()

    assert alive and still and took < 5  # 1.5 s of silence, and a sweep every second
    assert Event.objects.filter(action="agent.disconnect").count() == 1


def test_another_process_calls_a_device_of_the_listener(live_env, settings, make_token, redis_url):
    """Only the process running the listener holds the device; another (over Redis, as
    docs/DEPLOY.md runs several daphnes) reaches it through the agent's channel-layer group, as
    it does WebSocket devices."""
    token = make_token(name="llm")
    with mqtt_hub(live_env, settings, REDIS_URL=redis_url), hub(live_env, REDIS_URL=redis_url) as other:
        device = SimulatedMqttDevice(ota_section(FIRST))

        async def scenario():
            await device.connect()
            await eventually(lambda: tool_rows(FIRST), timeout=10)
            await eventually(lambda: _offers(other, token, VOLUME), timeout=10)
            answer = await sync_to_async(http_call)(other, token, VOLUME, {"volume": 64})
            await device.close()
            return answer

        answer = async_to_sync(scenario)()

    assert answer == {"content": [{"type": "text", "text": "true"}], "isError": False}
    assert device.state.volume == 64
    assert Event.objects.get(action="agent.call").after["ok"] is True


@sync_to_async
def _offers(base: str, token: str, name: str) -> bool:
    return any(tool["name"] == name for tool in http_request(base, token, "tools/list")["tools"])


def connect_with_will(section: dict[str, Any], will_topic: str, will: dict[str, Any]) -> int:
    """A plain client with the device's valid credentials and a last will on `will_topic`: its
    CONNACK code; accepted, it then drops as a device that lost power does (its socket closed
    without a DISCONNECT), which makes a broker publish the will."""
    answer: list[int] = []
    done = threading.Event()
    client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=section["client_id"], protocol=mqtt.MQTTv311)
    client.username_pw_set(section["username"], section["password"])
    client.will_set(will_topic, json.dumps(will), qos=0, retain=True)

    def on_connect(client, userdata, flags, code, properties):
        answer.append(code.value)
        done.set()

    client.on_connect = on_connect
    host, _, port = section["endpoint"].rpartition(":")
    client.connect(host, int(port), keepalive=30)
    client.loop_start()
    assert done.wait(5)
    client.loop_stop()
    sock = client.socket()
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
        sock.close()
    return answer[0]


def test_a_device_cannot_command_another_through_its_last_will(live_env, settings, make_token):
    """A device with its own valid credentials sets its last will to the victim's delivery topic
    (a forged tools/call) and drops: amqtt publishes wills without asking the ACL, so the CONNECT
    carrying a will is refused, wherever it aims; the same device connecting honestly is served."""
    token = make_token(name="llm")
    with mqtt_hub(live_env, settings) as base:
        victim = SimulatedMqttDevice(ota_section(FIRST))
        attacker_section = ota_section(SECOND)
        forged = {
            "session_id": "",
            "type": "mcp",
            "payload": {
                "jsonrpc": "2.0",
                "id": 777,
                "method": "tools/call",
                "params": {"name": "self.audio_speaker.set_volume", "arguments": {"volume": 99}},
            },
        }

        async def scenario():
            await victim.connect()
            await eventually(lambda: tool_rows(FIRST), timeout=10)
            aimed = await sync_to_async(connect_with_will)(
                attacker_section, f"devices/p2p/{victim.section['client_id']}", forged
            )
            own = await sync_to_async(connect_with_will)(
                attacker_section, attacker_section["publish_topic"], forged
            )
            await asyncio.sleep(1.5)  # what a will would have delivered by now
            forged_calls = [p for p in victim.received if p.get("id") == 777]
            assert (aimed, own, forged_calls, victim.state.volume != 99) == (135, 135, [], True)
            honest = SimulatedMqttDevice(attacker_section)
            await honest.connect()
            await eventually(lambda: tool_rows(SECOND), timeout=10)
            answer = await sync_to_async(http_call)(
                base, token, "aa_bb_cc_00_18_02__self_audio_speaker_set_volume", {"volume": 21}
            )
            await honest.close()
            await victim.close()
            return answer, honest

        # Refused with MQTT 3.1.1's "not authorized" (paho reports it as MQTT 5's 135); nothing
        # reached the victim.
        answer, honest = async_to_sync(scenario)()

    assert answer == {"content": [{"type": "text", "text": "true"}], "isError": False}
    assert honest.state.volume == 21
