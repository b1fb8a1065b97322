"""The limits of docs/LIMITS.md, each as the one who exceeds it sees it: HTTP bodies, MCP
sessions per token, requests at once per session, idle WebSockets, and the telemetry
queue's backpressure."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.testing import HttpCommunicator, WebsocketCommunicator
from pydantic import BaseModel

from audit.models import Event
from devices.agents.services import register_agent
from devices.home.models import Light
from devices.home.services import seed_home
from devices.telemetry.ingest import Ingestor, Source
from devices.telemetry.models import TelemetryReading
from homehub.asgi import application
from mcp_endpoint.engine import jsonrpc
from mcp_endpoint.engine.registry import ToolRegistry
from mcp_endpoint.engine.tools import ToolContext
from tests.mcp_helpers import LEGACY_INIT, Peer, ToolSet, tool_on
from tests.mqtt_support import wait_until

JSON_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
PING = {"jsonrpc": "2.0", "id": 2, "method": "ping"}


async def request(method: str, path: str, body: bytes = b"", **headers: str) -> dict[str, Any]:
    raw = [(k.replace("_", "-").encode(), v.encode()) for k, v in {"host": "testserver", **headers}.items()]
    return await HttpCommunicator(application, method, path, body=body, headers=raw).get_response(timeout=10)


async def mcp_post(token: str, message: dict[str, Any], session: str | None = None) -> dict[str, Any]:
    headers = {**JSON_HEADERS, "authorization": f"Bearer {token}"}
    if session:
        headers["mcp-session-id"] = session
    return await request("POST", "/mcp", json.dumps(message).encode(), **headers)


def session_of(response: dict[str, Any]) -> str:
    return dict(response["headers"])[b"mcp-session-id"].decode()


# --- HTTP bodies --------------------------------------------------------------------------------


@pytest.fixture
def seeded(transactional_db):
    seed_home()


@pytest.mark.django_db(transaction=True)
def test_rest_bodies_past_the_limit_get_413_before_django_reads_them(seeded, make_token, settings):
    settings.HTTP_MAX_BODY_BYTES = 1000
    token = make_token()
    auth = {"authorization": f"Bearer {token}", "content_type": "application/json"}
    big = json.dumps({"on": True, "pad": "x" * 2000}).encode()

    async def scenario():
        declared = await request("PATCH", "/api/lights/salon", big, content_length=str(len(big)), **auth)
        undeclared = await request("PATCH", "/api/lights/salon", big, **auth)  # as a chunked upload
        small = await request("PATCH", "/api/lights/salon", b'{"on": true}', **auth)
        return declared, undeclared, small

    declared, undeclared, small = async_to_sync(scenario)()
    for refused in (declared, undeclared):
        assert refused["status"] == 413
        assert json.loads(refused["body"]) == {
            "detail": "The request body is too large (at most 1000 bytes)."
        }
    assert small["status"] == 200 and Light.objects.get(name="salon").on


@pytest.mark.django_db(transaction=True)
def test_the_413_of_the_body_limit_speaks_the_requests_language(seeded, settings):
    settings.HTTP_MAX_BODY_BYTES = 1000
    big = json.dumps({"pad": "x" * 2000}).encode()
    spanish = {"accept_language": "es-GT,es;q=0.9", "content_length": str(len(big))}

    async def scenario():
        browser = await request("POST", "/invoices/", big, **spanish)
        chosen = await request(
            "POST", "/invoices/", big, cookie="django_language=es", content_length=str(len(big))
        )
        english = await request(
            "POST", "/invoices/", big, accept_language="en-US", content_length=str(len(big))
        )
        return browser, chosen, english

    browser, chosen, english = async_to_sync(scenario)()
    for refused in (browser, chosen):  # the browser's language, or the switcher's cookie
        assert refused["status"] == 413
        assert json.loads(refused["body"]) == {
            "detail": "El cuerpo de la solicitud es demasiado grande (como máximo 1000 bytes)."
        }
    assert json.loads(english["body"])["detail"] == "The request body is too large (at most 1000 bytes)."


@pytest.mark.django_db(transaction=True)
def test_rest_json_past_the_form_limit_is_413_json(seeded, make_token, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 100
    token = make_token()
    body = json.dumps({"on": True, "pad": "x" * 200}).encode()

    async def scenario():
        return await request(
            "PATCH",
            "/api/lights/salon",
            body,
            authorization=f"Bearer {token}",
            content_type="application/json",
            content_length=str(len(body)),
        )

    response = async_to_sync(scenario)()
    assert response["status"] == 413 and "too large" in json.loads(response["body"])["detail"]
    assert not Light.objects.get(name="salon").on


# --- MCP sessions per token -------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_new_session_past_the_limit_ends_the_least_recently_used(make_token, settings):
    settings.MCP_MAX_SESSIONS_PER_TOKEN = 2
    token, other = make_token(name="many"), make_token(name="other")

    async def scenario():
        elsewhere = session_of(await mcp_post(other, LEGACY_INIT))
        first, second, third = [session_of(await mcp_post(token, LEGACY_INIT)) for _ in range(3)]
        return [
            (await mcp_post(t, PING, s))["status"]
            for t, s in ((token, first), (token, second), (token, third), (other, elsewhere))
        ]

    assert async_to_sync(scenario)() == [404, 200, 200, 200]


@pytest.mark.django_db(transaction=True)
def test_a_websocket_past_the_limit_is_told_why_and_closed(make_token, settings):
    settings.MCP_MAX_SESSIONS_PER_TOKEN = 1
    token = make_token()

    def connection() -> WebsocketCommunicator:
        return WebsocketCommunicator(application, f"/ws/mcp/?token={token}")

    async def scenario():
        first, second, third = connection(), connection(), connection()
        await first.connect()
        await second.connect()
        refusal, closed = await second.receive_json_from(timeout=10), await second.receive_output(timeout=10)
        await first.disconnect()
        await third.connect()
        await third.send_json_to(LEGACY_INIT)
        answer = await third.receive_json_from(timeout=10)
        await third.disconnect()
        return refusal, closed, answer

    refusal, closed, answer = async_to_sync(scenario)()
    assert refusal["error"]["code"] == jsonrpc.TOO_MANY_SESSIONS and refusal["error"]["data"] == {"limit": 1}
    assert closed == {"type": "websocket.close", "code": 4429}
    assert "result" in answer


# --- requests at once per session ----------------------------------------------------------------


class Empty(BaseModel):
    pass


def gate_tool(reg: ToolRegistry | ToolSet, name: str = "gate") -> tuple[asyncio.Event, list[int]]:
    """A tool that waits until the returned event is set; `running` counts its calls."""
    opened, running = asyncio.Event(), []

    @tool_on(reg, scope="read", name=name)
    async def gate(args: Empty, ctx: ToolContext) -> dict:
        running.append(1)
        await opened.wait()
        return {"passed": True}

    return opened, running


def call(request_id: int, name: str = "gate") -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": name}}


def test_requests_past_the_limit_get_a_jsonrpc_error_and_the_session_goes_on(settings):
    settings.MCP_MAX_CONCURRENT_CALLS = 2
    reg = ToolRegistry()
    opened, running = gate_tool(reg)

    async def scenario():
        peer = Peer(tools=reg)
        await peer.initialize()
        for request_id in (1, 2, 3):
            await peer.session.receive(call(request_id), parsed=True)
        await peer.wait_for(lambda m: m.get("id") == 3)
        refused = list(peer.sent)
        opened.set()
        await peer.session.drain()
        await peer.session.receive(call(4), parsed=True)
        await peer.session.drain()
        return refused, peer.sent

    refused, sent = async_to_sync(scenario)()
    assert refused == [
        {
            "jsonrpc": "2.0",
            "id": 3,
            "error": {
                "code": jsonrpc.TOO_MANY_REQUESTS,
                "message": "Too many requests at once: at most 2 may run in one session; wait for an answer",
                "data": {"limit": 2},
            },
        }
    ]
    assert sorted(m["id"] for m in sent if "result" in m) == [1, 2, 4] and len(running) == 3


def test_a_batch_longer_than_the_limit_is_refused(settings):
    settings.MCP_MAX_CONCURRENT_CALLS = 2

    async def scenario():
        peer = Peer()
        await peer.initialize("2025-03-26")
        return await peer.session.handle([{**PING, "id": n} for n in range(3)])

    error = async_to_sync(scenario)()["error"]
    assert error == {
        "code": jsonrpc.INVALID_REQUEST,
        "message": "Invalid Request: a batch may carry at most 2 messages",
    }


@pytest.mark.django_db(transaction=True)
def test_http_posts_past_the_limit_get_429_with_a_jsonrpc_error(make_token, settings, extra_tools):
    settings.MCP_MAX_CONCURRENT_CALLS = 1
    settings.MCP_HTTP_JSON_RESPONSE = True
    token = make_token()
    opened, running = gate_tool(extra_tools, "limits_test_gate")

    async def scenario():
        session = session_of(await mcp_post(token, LEGACY_INIT))
        first = asyncio.ensure_future(mcp_post(token, call(5, "limits_test_gate"), session))
        while not running:
            await asyncio.sleep(0.01)
        refused = await mcp_post(token, call(6, "limits_test_gate"), session)
        opened.set()
        return refused, await first, await mcp_post(token, PING, session)

    refused, first, after = async_to_sync(scenario)()
    assert refused["status"] == 429
    assert json.loads(refused["body"])["error"]["code"] == jsonrpc.TOO_MANY_REQUESTS
    assert json.loads(first["body"])["result"]["structuredContent"] == {"passed": True}
    assert after["status"] == 200


# --- idle WebSockets -------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_silent_mcp_websocket_is_closed_with_4408(make_token, settings):
    settings.MCP_WS_IDLE_SECONDS = 0.3
    token = make_token()

    async def scenario():
        communicator = WebsocketCommunicator(application, f"/ws/mcp/?token={token}")
        assert (await communicator.connect())[0]
        await communicator.send_json_to(LEGACY_INIT)
        answer = await communicator.receive_json_from(timeout=10)
        closed = await communicator.receive_output(timeout=10)
        return answer, closed

    answer, closed = async_to_sync(scenario)()
    assert "result" in answer
    assert closed == {"type": "websocket.close", "code": 4408}


@pytest.mark.django_db(transaction=True)
def test_a_silent_device_is_pinged_then_closed_with_4408(settings):
    settings.DEVICE_IDLE_SECONDS = 1.0
    _, token = register_agent("idle_device", transport="ws", actor="test", interface=Event.Interface.SYSTEM)

    async def scenario():
        headers = [(b"authorization", f"Bearer {token}".encode()), (b"device-id", b"idle_device")]
        device = WebsocketCommunicator(application, "/ws/devices/", headers=headers)
        assert (await device.connect())[0]
        await device.send_json_to({"type": "hello", "features": {"mcp": True}})
        methods = []
        while True:
            output = await device.receive_output(timeout=10)
            if output["type"] == "websocket.close":
                return methods, output
            payload = json.loads(output["text"]).get("payload") or {}
            methods.append(payload.get("method"))

    methods, closed = async_to_sync(scenario)()
    assert "ping" in methods  # half-way through the silence
    assert closed == {"type": "websocket.close", "code": 4408}


# --- telemetry backpressure ------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_full_telemetry_queue_stops_reading_until_the_writer_catches_up():
    """Past MQTT_QUEUE_LIMIT, `offer` (paho's network thread) waits: the broker keeps the rest."""
    acked: list[int] = []
    source = Source("limits", lambda mid, qos: acked.append(mid))
    ingestor = Ingestor(
        lambda latest, alive: None,
        batch_size=1,
        batch_seconds=0,
        queue_limit=3,
        rejected_keep=100,
    )
    topic = "office/lab/temp/t1/temperature"
    feeder = threading.Thread(
        target=lambda: [
            ingestor.offer(source, topic, json.dumps({"value": n}).encode(), n, 1) for n in range(1, 7)
        ]
    )
    feeder.start()
    wait_until(lambda: ingestor.backlog == 3, what="a full queue")
    assert feeder.is_alive() and ingestor.counters["received"] == 3  # blocked, not dropping
    ingestor.start()
    try:
        wait_until(lambda: len(acked) == 6, what="every message acknowledged")
    finally:
        ingestor.stop()
    feeder.join(5)
    assert sorted(acked) == [1, 2, 3, 4, 5, 6]
    assert TelemetryReading.objects.filter(device_id="t1").count() == 6
