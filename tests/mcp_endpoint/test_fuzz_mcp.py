"""Fuzzing MCP's entry points: the JSON-RPC engine, stdio and seed 000's line protocol,
Streamable HTTP (/mcp), the WebSocket (/ws/mcp/) and an outbound endpoint's connection
(xiaozhi). Whatever arrives, the answer is in
the protocol's own error form, the connection keeps serving, and the home is unchanged."""

from __future__ import annotations

import asyncio
import io
import json
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.testing import HttpCommunicator, WebsocketCommunicator
from hypothesis import example, given
from hypothesis import strategies as st

from homehub.asgi import application
from mcp_endpoint.engine import jsonrpc
from mcp_endpoint.engine.tools import Caller
from mcp_endpoint.transports.simple import serve_simple
from mcp_endpoint.transports.stdio import serve_stdio
from tests.fuzz_support import (
    DEEP_ARRAY,
    FUZZ,
    NAN,
    NOT_UTF8,
    SURROGATE_ID,
    assert_clear,
    assert_jsonrpc_answer,
    frames,
    home_snapshot,
    messages,
    nasty_text,
    wire_bytes,
)
from tests.mcp_helpers import LEGACY_INIT, Peer, call

# Changes are out of these callers' reach (set_* needs `control`), so the home must not move.
SCOPES = frozenset({"read", "devices"})
PING = {"jsonrpc": "2.0", "id": "final-ping", "method": "ping"}
PONG = {"jsonrpc": "2.0", "id": "final-ping", "result": {}}


@pytest.fixture
def quiet_limits(settings):
    settings.MCP_RATE_LIMIT = 0


@FUZZ
@given(version=st.sampled_from(["2025-03-26", "2025-11-25"]), batch=st.lists(messages, max_size=6))
@example(
    version="2025-11-25",
    batch=[{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": [1]}}],
)
@example(
    version="2025-03-26", batch=[[{"jsonrpc": "2.0", "id": 10**100, "method": "tools/call", "params": {}}]]
)
@example(
    version="2025-11-25",
    batch=[
        {"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": "home://lights/\x00"}},
        call("call_agent_tool", {"agent_id": "\x00", "tool": "x"}, id=2),
        call("get_sensor_history", {"path": "a/b/c/\ud800"}, id=3),
        call("get_sensor_values", {"zone": "\x00"}, id=4),
    ],
)
def test_engine_answers_every_message(home, quiet_limits, version, batch):
    before = home_snapshot()

    async def scenario() -> None:
        peer = Peer(scopes=SCOPES)
        await peer.initialize(version)  # 2025-03-26 takes batches
        for message in batch:
            answer = await peer.session.handle(message)
            if answer is not None:
                assert_jsonrpc_answer(answer)
                assert_clear(answer)
        await peer.session.handle(LEGACY_INIT)
        assert await peer.session.handle(PING) == PONG
        await peer.session.close()

    async_to_sync(scenario)()
    assert home_snapshot() == before


@FUZZ
@given(raw=st.lists(st.one_of(frames, frames.map(wire_bytes)), max_size=6))
@example(raw=[DEEP_ARRAY, NAN, SURROGATE_ID, NOT_UTF8])
@example(raw=['{"jsonrpc": "2.0", "id": 1, "method": []}'])
def test_engine_stream_entry_answers_every_frame(home, quiet_limits, raw):
    """`receive` (stdio, WebSocket): frames as bytes or text, requests run concurrently."""

    async def scenario() -> None:
        peer = Peer(scopes=SCOPES)
        for frame in raw:
            await peer.session.receive(frame)
        await peer.session.receive(json.dumps(LEGACY_INIT))
        await peer.session.receive(json.dumps(PING))
        await peer.session.drain()
        for sent in peer.sent:
            assert_jsonrpc_answer(sent)
            assert_clear(sent)
            jsonrpc.dumps(sent).encode()  # what a transport writes: UTF-8, whatever the peer sent
        assert PONG in peer.sent
        await peer.session.close()

    async_to_sync(scenario)()


lines = st.one_of(
    frames.map(wire_bytes),
    st.binary(max_size=64),
    st.sampled_from([NOT_UTF8, b"\xff" * 3000, b"x" * 5000, b"\r", b"\x00"]),
)


def _run_lines(serve, input_lines: list[bytes], scopes=SCOPES) -> list[Any]:
    stdin = io.BytesIO(b"\n".join(input_lines))
    stdout = io.BytesIO()
    caller = Caller("fuzzer", "mcp-stdio", scopes)
    async_to_sync(serve)(caller, stdin, stdout, 2048)
    # Lines end at "\n" only: str.splitlines would also cut at U+2028 and the like, which JSON
    # keeps raw inside a string.
    return [json.loads(line) for line in stdout.getvalue().split(b"\n") if line]


@FUZZ
@given(junk=st.lists(lines, max_size=6))
@example(junk=[b"x" * 5000, DEEP_ARRAY.encode(), NOT_UTF8, SURROGATE_ID.encode()])
def test_stdio_answers_every_line(home, junk):
    """Huge lines, bytes that are not UTF-8, deep nesting: an error object each, and on."""
    tail = [json.dumps(LEGACY_INIT).encode(), json.dumps(PING).encode()]
    out = _run_lines(serve_stdio, [*junk, *tail])
    for message in out:
        assert_jsonrpc_answer(message)
        assert_clear(message)
    assert PONG in out  # requests run concurrently: others may finish after it


@FUZZ
@given(junk=st.lists(lines, max_size=6))
@example(junk=[b"x" * 5000, DEEP_ARRAY.encode(), b'{"type":"call","tool":"get_all_states","args":NaN}'])
@example(junk=[b'{"type":"call","id":"\\ud800","tool":"nope"}'])
@example(junk=['{"type":"call","id":"\u2028\x85","tool":"nope"}'.encode()])  # raw in the answer's id
def test_simple_protocol_answers_every_line(home, junk):
    """Seed 000's protocol: anything but a call or quit is an `error` line, and on."""
    call = {"type": "call", "id": "last", "tool": "get_all_states", "args": {}}
    out = _run_lines(
        serve_simple, [line for line in junk if b"quit" not in line] + [json.dumps(call).encode()]
    )
    assert out[0]["type"] == "ready"
    for message in out[1:-1]:
        assert message["type"] in ("error", "result") and "id" in message, message
        if message["type"] == "error":
            assert message["ok"] is False and isinstance(message["error"], str)
    assert out[-1]["type"] == "result" and out[-1]["id"] == "last"


# --- Streamable HTTP ------------------------------------------------------------------------

header_text = st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0xFF), max_size=40)
HEADER_CHOICES = {
    "accept": st.one_of(st.just("application/json, text/event-stream"), header_text),
    "content-type": st.one_of(st.just("application/json"), header_text),
    "mcp-protocol-version": st.one_of(
        st.sampled_from(["2026-07-28", "2025-03-26", "2025-11-25"]), header_text
    ),
    "mcp-session-id": header_text,
    "mcp-method": st.one_of(st.sampled_from(["tools/call", "ping"]), header_text),
    "mcp-name": st.one_of(st.just("=?base64?////?="), header_text),
    "origin": st.one_of(st.just("http://evil.example"), header_text),
    "content-length": st.one_of(st.just("99999999999"), header_text),
}
http_headers = st.fixed_dictionaries({}, optional=HEADER_CHOICES)
bodies = st.one_of(frames.map(wire_bytes), st.binary(max_size=64), st.just(b"x" * 70000))


async def http(method: str, body: bytes, headers: dict[str, str], token: str) -> dict[str, Any]:
    raw = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]
    raw.append((b"authorization", f"Bearer {token}".encode()))
    communicator = HttpCommunicator(application, method, "/mcp", body=body, headers=raw)
    return await communicator.get_response(timeout=10)


def _http_answer(response: dict[str, Any]) -> list[Any]:
    """The JSON-RPC messages of a response, whether plain JSON or an SSE stream."""
    headers = dict(response["headers"])
    body = response["body"].decode()
    if headers.get(b"content-type") == b"text/event-stream":
        return [
            json.loads(line[5:])
            for line in body.splitlines()
            if line.startswith("data:") and line[5:].strip()
        ]
    return [json.loads(body)] if body else []


@pytest.mark.django_db(transaction=True)
@FUZZ
@given(method=st.sampled_from(["POST", "POST", "POST", "DELETE", "PUT"]), body=bodies, headers=http_headers)
@example(method="POST", body=SURROGATE_ID.encode(), headers={})
@example(method="POST", body=DEEP_ARRAY.encode(), headers={})
def test_http_answers_every_request(make_token, quiet_limits, method, body, headers):
    token = make_token(scopes=sorted(SCOPES))
    before = home_snapshot()
    valid_headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}

    async def scenario() -> None:
        response = await http(method, body, {**valid_headers, **headers}, token)
        assert 200 <= response["status"] < 500, response
        if response["status"] >= 400:
            (error,) = _http_answer(response)
            assert_jsonrpc_answer(error)
            assert "error" in error
        else:
            for message in _http_answer(response):
                assert_jsonrpc_answer(message)
                assert_clear(message)
        init = await http("POST", json.dumps(LEGACY_INIT).encode(), valid_headers, token)
        assert init["status"] == 200, init
        session = dict(init["headers"])[b"mcp-session-id"].decode()
        ping = await http(
            "POST", json.dumps(PING).encode(), {**valid_headers, "mcp-session-id": session}, token
        )
        assert _http_answer(ping) == [PONG]

    async_to_sync(scenario)()
    assert home_snapshot() == before


# --- WebSocket /ws/mcp/ ---------------------------------------------------------------------


async def _until_pong(communicator: WebsocketCommunicator) -> list[dict[str, Any]]:
    seen = []
    while True:
        message = json.loads(await communicator.receive_from(timeout=10))
        assert_jsonrpc_answer(message)
        assert_clear(message)
        seen.append(message)
        if message == PONG:
            return seen


@pytest.mark.django_db(transaction=True)
@FUZZ
@given(junk=st.lists(st.one_of(frames, nasty_text).filter(bool), max_size=6))
@example(junk=[DEEP_ARRAY, NAN, SURROGATE_ID, "x" * 5000])
def test_websocket_answers_every_frame(make_token, quiet_limits, settings, junk):
    settings.MCP_MAX_MESSAGE_BYTES = 4096
    token = make_token(scopes=sorted(SCOPES))
    before = home_snapshot()

    async def scenario() -> None:
        communicator = WebsocketCommunicator(application, f"/ws/mcp/?token={token}", subprotocols=["mcp"])
        connected, _ = await communicator.connect()
        assert connected
        for frame in junk:
            await communicator.send_to(text_data=frame)
        await communicator.send_to(text_data=json.dumps(LEGACY_INIT))
        await communicator.send_to(text_data=json.dumps(PING))
        await _until_pong(communicator)
        await communicator.disconnect()

    async_to_sync(scenario)()
    assert home_snapshot() == before


@pytest.mark.django_db(transaction=True)
def test_websocket_binary_frame_closes_with_unsupported_data(make_token):
    token = make_token()

    async def scenario() -> dict[str, Any]:
        communicator = WebsocketCommunicator(application, f"/ws/mcp/?token={token}")
        await communicator.connect()
        await communicator.send_to(bytes_data=b"\x00\x01")
        return await communicator.receive_output(timeout=5)

    assert async_to_sync(scenario)() == {"type": "websocket.close", "code": 4003}


@pytest.mark.django_db(transaction=True)
@FUZZ
@given(junk=st.lists(st.one_of(frames, frames.map(wire_bytes), nasty_text).filter(bool), max_size=6))
@example(junk=[DEEP_ARRAY, NAN, SURROGATE_ID, NOT_UTF8, "x" * 20000, "\ud800"])
def test_outbound_endpoint_answers_every_frame(quiet_limits, settings, junk):
    """An outbound endpoint (xiaozhi) sends anything over the connection the hub opened: every
    frame, text or binary, gets a JSON-RPC answer or none, and the session goes on."""
    from mcp_endpoint.transports.outbound.connection import serve_endpoint
    from tests.xiaozhi_support import FakeXiaozhi

    settings.MCP_MAX_MESSAGE_BYTES = 16384  # the hostile texts are read (past twice it, the socket closes)
    caller = Caller("kitchen", "mcp-endpoint", SCOPES, tools=frozenset({"get_all_states", "set_light_state"}))
    before = home_snapshot()

    async def opened() -> None:
        return None

    async def scenario() -> None:
        async with FakeXiaozhi() as xiaozhi:
            hub = asyncio.ensure_future(
                serve_endpoint(xiaozhi.url, caller, on_open=opened, on_call=lambda: None)
            )
            client = await xiaozhi.connection()
            for frame in junk:
                encodable = isinstance(frame, str) and frame.encode("utf-8", "surrogatepass") == frame.encode(
                    "utf-8", "ignore"
                )
                await client.ws.send(frame if encodable or isinstance(frame, bytes) else wire_bytes(frame))
            await client.ws.send(json.dumps(LEGACY_INIT))
            await client.ws.send(json.dumps(PING))
            while (message := json.loads(await asyncio.wait_for(client.ws.recv(), 10))) != PONG:
                assert_jsonrpc_answer(message)
                assert_clear(message)
            await client.ws.close()
            assert (await asyncio.wait_for(hub, 10)).startswith("the endpoint closed the connection")

    async_to_sync(scenario)()
    assert home_snapshot() == before
