"""Fuzzing the device side: ESP32 frames on /ws/devices/, the MCP client that reads devices'
answers, MQTT telemetry through the worker's ingest path, and MQTT announcements and
commands. Bad input is ignored or kept as a rejected message; the hub keeps serving."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator
from django.test import override_settings
from hypothesis import example, given
from hypothesis import strategies as st

from audit.models import Event
from common.mqtt.connection import BrokerConfig
from dashboard.consumers import HomeConsumer
from dashboard.toolforms import arguments_from, fields_for
from devices.agents.models import Agent
from devices.agents.services import register_agent
from devices.home.mqtt import CommandError, parse_switch
from devices.home.services import seed_home
from devices.mqtt.worker import Worker
from devices.soms.link import AnnouncementError, parse_announcement
from devices.telemetry.ingest import Ingestor, Source
from devices.telemetry.models import RejectedMessage, TelemetryReading
from homehub.asgi import application
from mcp_endpoint.client.mcp_client import McpClient, RemoteError
from mcp_endpoint.engine.session import ServerSession
from mcp_endpoint.engine.tools import Caller
from tests.fuzz_support import (
    DEEP_ARRAY,
    FUZZ,
    NAN,
    TOOLS,
    frames,
    home_snapshot,
    json_values,
    nasty_text,
    wire_bytes,
    wire_text,
)

# --- ESP32 devices on /ws/devices/ ----------------------------------------------------------

device_payloads = st.one_of(
    json_values,
    st.fixed_dictionaries(
        {"jsonrpc": st.just("2.0")},
        optional={
            "id": json_values,
            "method": st.one_of(st.just("notifications/message"), nasty_text),
            "params": json_values,
            "result": json_values,
            "error": json_values,
        },
    ),
)
device_messages = st.one_of(
    st.fixed_dictionaries(
        {"type": st.sampled_from(["hello", "mcp", "listen", "abort"])},
        optional={"features": json_values, "payload": device_payloads, "session_id": json_values},
    ),
    json_values,
)
device_frames = st.one_of(
    device_messages.map(wire_text),
    frames,
    st.binary(min_size=1, max_size=64),
    st.just("x" * 70_000),
)
HELLO = {"type": "hello", "version": 1, "features": {"mcp": True}, "transport": "websocket"}


@pytest.mark.django_db(transaction=True)
@FUZZ
@given(junk=st.lists(device_frames.filter(bool), max_size=6))
@example(junk=[DEEP_ARRAY, NAN, json.dumps(HELLO), '{"type":"mcp","payload":[' * 3000])
@example(
    junk=[
        json.dumps(HELLO),
        json.dumps(
            {"type": "mcp", "payload": {"jsonrpc": "2.0", "method": "x", "params": {"a": "\x00\ud800"}}}
        ),
    ]
)
def test_device_socket_survives_every_frame(junk):
    agent_id = "fuzz_device"
    _, token = register_agent(agent_id, transport="ws", actor="test", interface=Event.Interface.SYSTEM)
    before = home_snapshot()

    async def scenario() -> None:
        headers = [(b"authorization", f"Bearer {token}".encode()), (b"device-id", agent_id.encode())]
        device = WebsocketCommunicator(application, "/ws/devices/", headers=headers)
        connected, _ = await device.connect()
        assert connected
        for frame in junk:
            if isinstance(frame, bytes):
                await device.send_to(bytes_data=frame)
            else:
                await device.send_to(text_data=frame)
        await device.send_to(text_data=json.dumps(HELLO))
        while True:  # the hub's own requests (initialize) may come first
            answer = json.loads(await device.receive_from(timeout=10))
            if answer.get("type") == "hello":
                break
        assert len(answer["session_id"]) == 32
        await device.disconnect()

    async_to_sync(scenario)()
    assert not Agent.objects.get(agent_id=agent_id).online
    assert home_snapshot() == before


@FUZZ
@given(junk=st.lists(device_payloads, max_size=8))
def test_mcp_client_settles_only_real_answers(junk):
    """Whatever a device or an MQTT agent sends back, a pending call settles once, on its
    own id, with the result or a RemoteError: never an exception out of `feed`."""

    async def scenario() -> Any:
        sent: list[dict[str, Any]] = []

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        async def noted(method: str, params: dict[str, Any]) -> None:
            assert isinstance(method, str) and isinstance(params, dict)

        client = McpClient(send, timeout=5, on_notification=noted)
        call = asyncio.ensure_future(client.request("tools/call", {"name": "x"}))
        await asyncio.sleep(0)
        request_id = sent[0]["id"]
        for payload in junk:
            if isinstance(payload, dict) and payload.get("id") == request_id:
                payload = {**payload, "id": "not-this-one"}
            await client.feed(payload)
        await client.feed({"jsonrpc": "2.0", "id": request_id, "result": {"ok": 1}})
        return await call

    assert async_to_sync(scenario)() == {"ok": 1}


def test_remote_errors_of_any_shape_are_remote_errors():
    async def scenario(error: Any) -> Exception:
        sent: list[dict[str, Any]] = []

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        client = McpClient(send, timeout=5)
        call = asyncio.ensure_future(client.request("tools/call"))
        await asyncio.sleep(0)
        await client.feed({"jsonrpc": "2.0", "id": sent[0]["id"], "error": error})
        with pytest.raises(RemoteError) as caught:
            await call
        return caught.value

    assert async_to_sync(scenario)("a plain string").message == "a plain string"
    assert async_to_sync(scenario)({"code": True, "message": 5}).code is None


# --- MQTT telemetry through the worker's ingest path ------------------------------------------

segments = st.one_of(st.sampled_from(["z1", "temp", "esp32_01", "co2", "heartbeat", ""]), nasty_text)
topics = st.one_of(
    st.tuples(segments, segments, segments, segments).map(lambda parts: "office/" + "/".join(parts)),
    nasty_text.map(lambda text: "office/" + text),
)
reading_values = st.one_of(json_values, st.integers(min_value=10**308, max_value=10**400))
payloads = st.one_of(
    st.fixed_dictionaries(
        {}, optional={"value": reading_values, "unit": json_values, "timestamp": reading_values}
    ).map(lambda body: json.dumps(body).encode()),
    reading_values.map(lambda value: json.dumps(value).encode()),
    frames.map(wire_bytes),
    st.binary(max_size=64),
    st.just(b"1" * 5000),
)
GOOD_TOPIC = "office/fuzz/temp/esp32_ok/temperature"


@pytest.mark.django_db(transaction=True)
@FUZZ
@given(messages=st.lists(st.tuples(topics, payloads, st.sampled_from([0, 1])), max_size=8))
@example(
    messages=[("office/a/b/c/d", b"1" * 400, 1), ("office/a/b/c/d", b'{"value": 1, "unit": "\\u0000"}', 1)]
)
@example(
    messages=[("office/a\x00/b/c/d", b"1", 1), ("office/a/b/c/d", b'{"value": 1, "unit": "\\ud800"}', 1)]
)
@example(messages=[("office/a/b/c/\ud800", b"\x00\xff", 1), ("office/a/b/c/d", b"[" * 3000, 1)])
def test_ingest_stores_or_rejects_every_message(messages):
    """Every message is stored, counted as a heartbeat or kept as rejected, acknowledged
    once, and a good reading behind the bad ones is stored."""
    acked: list[int] = []
    done = threading.Event()

    def ack(mid: int, qos: int) -> None:
        acked.append(mid)
        if mid == len(messages) + 1:
            done.set()

    ingestor = Ingestor(
        lambda latest, alive: None, batch_size=3, batch_seconds=0, queue_limit=4, rejected_keep=1000
    )
    source = Source("fuzz", ack)
    rejected_before = RejectedMessage.objects.count()
    ingestor.start()

    def feed() -> None:  # in a thread, as paho's: offer() blocks while the bounded queue is full
        for mid, (topic, payload, qos) in enumerate(messages, 1):
            ingestor.offer(source, topic, payload, mid, qos)
        ingestor.offer(source, GOOD_TOPIC, b'{"value": 21.5, "unit": "c"}', len(messages) + 1, 1)

    feeder = threading.Thread(target=feed)
    feeder.start()
    assert done.wait(30), f"the writer is stuck; acknowledged {acked}"
    feeder.join(5)
    ingestor.stop()
    counters = ingestor.counters
    assert sorted(acked) == [mid for mid, (_, _, qos) in enumerate(messages, 1) if qos] + [len(messages) + 1]
    assert counters["stored"] + counters["rejected"] + counters["heartbeats"] == len(messages) + 1
    assert RejectedMessage.objects.count() - rejected_before == counters["rejected"]
    assert TelemetryReading.objects.filter(device_id="esp32_ok", value=21.5).exists()


# --- MQTT announcements and commands ----------------------------------------------------------


@given(
    payload=st.one_of(
        frames.map(wire_bytes), st.binary(max_size=64), json_values.map(wire_text).map(str.encode)
    )
)
@FUZZ
@example(payload=b'{"agent_id": "a", "heartbeat": 1e400}')
def test_announcements_are_agents_or_reasons(payload):
    try:
        announcement = parse_announcement(payload)
    except AnnouncementError as exc:
        assert str(exc)
        return
    assert 1 <= len(announcement.agent_id) <= 64
    json.dumps(announcement.details, allow_nan=False)


@given(
    payload=st.one_of(
        frames.map(wire_bytes), st.binary(max_size=300), json_values.map(wire_text).map(str.encode)
    )
)
@FUZZ
def test_switch_commands_are_on_off_or_refused(payload):
    try:
        assert parse_switch(payload, "on") in (True, False)
    except CommandError as exc:
        assert str(exc)


# --- the audit trail of tool calls ------------------------------------------------------------


@FUZZ
@given(name=st.sampled_from(TOOLS), arguments=json_values)
@example(name="get_all_states", arguments={"\x00": "\ud800"})
def test_every_audited_call_is_stored_whatever_its_arguments(home, settings, name, arguments):
    """A call's arguments go to the audit trail as given; text no database can store (NUL,
    lone surrogates) must not keep that row, or the rows behind it, from being written."""
    settings.MCP_RATE_LIMIT = 0
    settings.AUDIT_READ_CALLS = True  # every call of these tools is then kept
    caller = Caller("fuzzer", "mcp-ws", frozenset({"read", "devices"}), audited=True)
    kept = Event.objects.filter(actor="fuzzer", action__in=["tool.call", "agent.call"])
    already = kept.count()

    async def scenario() -> dict[str, Any]:
        async def discard(message: dict[str, Any]) -> None:
            pass

        session = ServerSession(caller, discard)
        message = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        }
        return await session._handle_one(message, discard)

    answer = async_to_sync(scenario)()
    assert "result" in answer or "error" in answer
    if "result" in answer:  # a call that ran has its one row (the gateway's for a device) by now
        assert kept.count() == already + 1


# --- the dashboard's forms for a device's tools -----------------------------------------------

schemas = st.one_of(
    json_values,
    st.fixed_dictionaries(
        {"type": st.just("object")},
        optional={
            "properties": st.dictionaries(
                nasty_text,
                st.one_of(
                    json_values,
                    st.fixed_dictionaries(
                        {},
                        optional={
                            "type": st.one_of(
                                st.sampled_from(["string", "integer", "number", "boolean", "object"]),
                                json_values,
                            ),
                            "enum": json_values,
                            "title": json_values,
                            "minimum": json_values,
                        },
                    ),
                ),
                max_size=4,
            ),
            "required": json_values,
        },
    ),
)


@FUZZ
@given(
    schema=schemas,
    posted=st.dictionaries(nasty_text, st.one_of(nasty_text, st.sampled_from(["[" * 3000, "1e400"]))),
)
@example(schema={"properties": {"a": {}}, "required": [["a"]]}, posted={})
@example(schema={"properties": {"a": {"type": "object"}}}, posted={"arg-a": "[" * 3000})
def test_a_device_schema_of_any_shape_gives_a_form(schema, posted):
    """A device chooses its tools' schemas: the Devices page draws a form from any of them,
    and what is posted becomes arguments or per-field errors."""
    fields = fields_for(schema)
    arguments, errors = arguments_from(schema, posted)
    names = {field["name"] for field in fields}
    assert set(arguments) <= names and set(errors) <= names
    json.dumps(arguments, allow_nan=True)


# --- the dashboard's live socket --------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
@FUZZ
@given(junk=st.lists(st.one_of(frames, st.binary(min_size=1, max_size=32)).filter(bool), max_size=5))
@example(junk=[DEEP_ARRAY, "not json", b"\x00"])
def test_the_dashboard_socket_survives_every_frame(django_user_model, junk):
    user, _ = django_user_model.objects.get_or_create(username="fuzzer")

    async def scenario() -> dict[str, Any]:
        browser = WebsocketCommunicator(HomeConsumer.as_asgi(), "/ws/home/")
        browser.scope["user"] = user
        assert (await browser.connect())[0]
        assert (await browser.receive_json_from(timeout=10))["type"] == "hello"
        for frame in junk:
            await (
                browser.send_to(bytes_data=frame)
                if isinstance(frame, bytes)
                else browser.send_to(text_data=frame)
            )
        await browser.send_json_to({"type": "ping"})
        while (answer := await browser.receive_json_from(timeout=10))["type"] != "pong":
            pass
        await browser.disconnect()
        return answer

    assert async_to_sync(scenario)() == {"type": "pong"}


# --- the MQTT worker's control topics (agents, home commands) ---------------------------------

control_topics = st.one_of(
    st.sampled_from(["mcp/discovery", "homehub/alarm/set", "homehub/status"]),
    st.builds("mcp/{}/response/{}".format, segments, segments),
    st.builds("mcp/{}/status".format, segments),
    st.builds("homehub/lights/{}/set".format, st.one_of(st.just("salon"), nasty_text)),
)
announcements = st.fixed_dictionaries(
    {"agent_id": st.one_of(st.just("fuzz_agent"), nasty_text, json_values)},
    optional={"capabilities": json_values, "heartbeat": json_values, "methods": json_values},
).map(lambda body: json.dumps(body).encode())


@pytest.mark.django_db(transaction=True)
@FUZZ
@given(messages=st.lists(st.tuples(control_topics, st.one_of(payloads, announcements)), max_size=6))
@example(messages=[("mcp/discovery", b'{"agent_id": "fuzz_agent", "capabilities": ["\\u0000"]}')])
@example(messages=[("homehub/lights/\x00/set", b"on"), ("mcp/fuzz_agent/response/1", b"[" * 3000)])
def test_the_worker_acts_on_control_messages_or_refuses_them(messages):
    """Announcements, agents' answers and statuses, home commands: each is acted on or kept
    as a rejected message, and a valid command right after still switches the light."""
    seed_home()
    rejected_before = RejectedMessage.objects.count()
    worker = Worker(BrokerConfig.from_settings(client_id="fuzz-worker"))

    async def scenario() -> None:
        await worker.agents.start()
        await worker.home.start()
        try:
            for topic, payload in messages:
                await worker._dispatch(topic, payload, False)
            await worker._dispatch("homehub/lights/salon/set", b"on", False)
            await worker._dispatch("homehub/alarm/set", b'{"armed": false, "code": "fuzz-code"}', False)
        finally:
            await worker.agents.stop()
            await worker.home.stop()

    with override_settings(MQTT_DISARM_CODE="fuzz-code"):
        async_to_sync(scenario)()
    assert home_snapshot()["lights"]["salon"] is True and home_snapshot()["alarm"] is False
    assert RejectedMessage.objects.count() - rejected_before <= len(messages)
