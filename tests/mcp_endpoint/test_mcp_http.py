"""MCP Streamable HTTP at /mcp against a live daphne: status codes, sessions, tokens, SDK client."""

import json
import time
from datetime import timedelta

import httpx
import pytest
from asgiref.sync import async_to_sync
from django.conf import settings
from django.utils import timezone

from audit.models import Event
from devices.home.models import Light
from mcp_endpoint.models import AccessToken
from tests.hub_support import running_hub
from tests.mcp_helpers import MODERN_META, call, sdk_client

pytestmark = pytest.mark.live
ACCEPT = "application/json, text/event-stream"
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2024-11-05",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}


def sse_messages(text: str) -> list[dict]:
    """Parse an SSE body the way seed 003's client does: `event: message` frames."""
    messages, event, data = [], None, None
    for line in text.split("\n"):
        if line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data = line[5:].strip()
        elif line == "" and event:
            if event == "message":
                messages.append(json.loads(data))
            event, data = None, None
    return messages


def post(base, body, token=None, session=None, accept=ACCEPT, **headers):
    h = {"content-type": "application/json", "accept": accept, **headers}
    if token:
        h["authorization"] = f"Bearer {token}"
    if session:
        h["mcp-session-id"] = session
    content = body if isinstance(body, (bytes, str)) else json.dumps(body)
    return httpx.post(base + "/mcp", content=content, headers=h, timeout=10)


def test_seed_003_client_flow(daphne_server, make_token):
    """Seed 003's JavaScript client, step by step (plus the bearer token the hub requires)."""
    token = make_token()
    response = post(daphne_server, INIT, token)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.headers["x-accel-buffering"] == "no"
    session = response.headers["mcp-session-id"]
    assert session.isascii() and len(session) >= 32
    assert sse_messages(response.text)[0]["result"]["serverInfo"]["name"] == "homehub"
    assert response.text.startswith("event: message")  # no priming event before 2025-11-25

    notified = post(
        daphne_server, {"jsonrpc": "2.0", "method": "notifications/initialized", "params": {}}, token, session
    )
    assert notified.status_code == 202 and notified.content == b""

    listed_response = post(
        daphne_server, {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}, token, session
    )
    # A lone answer is written in one piece, with its length: no chunked framing to parse.
    assert int(listed_response.headers["content-length"]) == len(listed_response.content)
    assert "transfer-encoding" not in listed_response.headers
    listed = sse_messages(listed_response.text)
    assert "set_light_state" in {t["name"] for t in listed[0]["result"]["tools"]}

    result = sse_messages(
        post(
            daphne_server, call("set_light_state", {"name": "dormitorio", "on": True}, 3), token, session
        ).text
    )
    assert json.loads(result[0]["result"]["content"][0]["text"]) == {"ok": True}
    assert Light.objects.get(name="dormitorio").on is True
    event = Event.objects.get(target="light:dormitorio")
    assert (event.actor, event.interface) == ("agent", "mcp-http")

    deleted = httpx.delete(
        daphne_server + "/mcp", headers={"mcp-session-id": session, "authorization": f"Bearer {token}"}
    )
    assert deleted.status_code == 204
    gone = post(daphne_server, {"jsonrpc": "2.0", "id": 4, "method": "tools/list"}, token, session)
    assert gone.status_code == 404


def test_status_codes(daphne_server, make_token):
    token = make_token()
    base = daphne_server
    assert post(base, INIT).status_code == 401
    unauthorized = post(base, INIT, "hh_nope_nope")
    assert unauthorized.status_code == 401
    challenge = unauthorized.headers["www-authenticate"]
    assert challenge.startswith("Bearer ") and "/.well-known/oauth-protected-resource/mcp" in challenge
    metadata = httpx.get(base + "/.well-known/oauth-protected-resource/mcp").json()
    assert metadata["resource"].endswith("/mcp") and "control" in metadata["scopes_supported"]
    assert httpx.get(base + "/.well-known/oauth-protected-resource").status_code == 200

    assert post(base, INIT, token, accept="application/json").status_code == 406
    assert post(base, INIT, token, origin="http://evil.example").status_code == 403
    # Another port or scheme of the hub's own host is another origin.
    port = int(base.rsplit(":", 1)[1])
    assert post(base, INIT, token, origin=f"http://127.0.0.1:{port + 1}").status_code == 403
    assert post(base, INIT, token, origin=base.replace("http://", "https://")).status_code == 403
    assert post(base, INIT, token, origin=base).status_code == 200
    assert post(base, INIT, token, **{"mcp-protocol-version": "1999-01-01"}).status_code == 400
    assert post(base, b'{"jsonrpc": "2.0", "id": 1, "method": ', token).status_code == 400
    assert post(base, b"x" * (5 * 1024 * 1024), token).status_code == 413
    assert post(base, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, token).status_code == 400
    assert (
        post(base, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, token, "no-such-session").status_code
        == 404
    )
    assert httpx.put(base + "/mcp", headers={"authorization": f"Bearer {token}"}).status_code == 405
    # A session belongs to the token that opened it.
    session = post(base, INIT, token).headers["mcp-session-id"]
    other = make_token(name="other")
    assert post(base, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, other, session).status_code == 404


def test_scopes_and_token_states(daphne_server, make_token):
    base = daphne_server
    reader = make_token(scopes=["read"], name="reader")
    session = post(base, INIT, reader).headers["mcp-session-id"]
    listed = sse_messages(
        post(base, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, reader, session).text
    )
    names = {t["name"] for t in listed[0]["result"]["tools"]}
    assert "get_all_states" in names and "set_light_state" not in names
    refused = post(base, call("set_light_state", {"name": "salon", "on": True}), reader, session)
    assert refused.status_code == 403
    assert 'error="insufficient_scope"' in refused.headers["www-authenticate"]
    assert not Light.objects.filter(on=True).exists()

    expired = make_token(name="old", expires_at=timezone.now() - timedelta(minutes=1))
    assert post(base, INIT, expired).status_code == 401
    revoked = make_token(name="gone")
    session = post(base, INIT, revoked).headers["mcp-session-id"]
    AccessToken.objects.filter(name="gone").update(revoked=True)  # from another process than daphne's
    revoked_at = time.monotonic()
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    while post(base, listing, revoked, session).status_code != 401:
        assert time.monotonic() - revoked_at < settings.MCP_AUTH_CACHE_SECONDS + 1, "revoked token works on"
        time.sleep(0.1)


def test_stateless_2026_requests(daphne_server, make_token):
    token = make_token()
    meta = MODERN_META
    body = {
        "jsonrpc": "2.0",
        "id": 5,
        "method": "tools/call",
        "params": {"name": "get_alarm_status", "arguments": {}, "_meta": meta},
    }
    headers = {
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": "get_alarm_status",
    }
    ok = post(daphne_server, body, token, **headers)
    assert ok.status_code == 200 and "mcp-session-id" not in ok.headers
    assert sse_messages(ok.text)[0]["result"]["structuredContent"] == {"armed": False}
    bad = post(daphne_server, body, token, **{**headers, "mcp-name": "set_alarm_state"})
    assert bad.status_code == 400 and bad.json()["error"]["code"] == -32020
    encoded = post(
        daphne_server, body, token, **{**headers, "mcp-name": "=?base64?Z2V0X2FsYXJtX3N0YXR1cw==?="}
    )
    assert encoded.status_code == 200
    ping = {"jsonrpc": "2.0", "id": 6, "method": "ping", "params": {"_meta": meta}}
    gone = post(daphne_server, ping, token, **{**headers, "mcp-method": "ping"})
    assert gone.status_code == 404 and gone.json()["error"]["code"] == -32601


def test_priming_event_from_2025_11_25(daphne_server, make_token):
    token = make_token()
    init = {**INIT, "params": {**INIT["params"], "protocolVersion": "2025-11-25"}}
    response = post(daphne_server, init, token)
    assert response.text.startswith("id: ")  # priming event: an id and empty data
    session = response.headers["mcp-session-id"]
    listed = post(daphne_server, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, token, session)
    assert listed.text.startswith("id: ") and sse_messages(listed.text)[0]["id"] == 2


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_official_sdk_client_over_http(daphne_server, make_token, mode):

    token = make_token()

    async def scenario():
        async with sdk_client(daphne_server, token, mode=mode) as client:
            listed = await client.list_tools()
            set_result = await client.call_tool("set_light_state", {"name": "bano", "on": True})
            states = await client.call_tool("get_all_states", {})
            return listed, set_result, states

    listed, set_result, states = async_to_sync(scenario)()
    assert "get_presence" in {t.name for t in listed.tools}
    assert set_result.structured_content == {"ok": True}
    assert states.structured_content["lights"]["bano"] is True


def test_failed_calls_are_audited_before_the_answer_reads_only_counted(daphne_server, make_token):
    token = make_token(scopes=["read"], name="auditor")
    session = post(daphne_server, INIT, token).headers["mcp-session-id"]
    post(daphne_server, call("get_alarm_status", {}), token, session)
    post(daphne_server, call("get_alarm_status", {"bogus": 1}, 3), token, session)
    post(daphne_server, call("set_alarm_state", {"armed": True}, 4), token, session)  # no control scope
    events = list(Event.objects.filter(actor="auditor", action="tool.call").order_by("id"))
    assert [(e.interface, e.target, e.after["ok"]) for e in events] == [
        ("mcp-http", "tool:get_alarm_status", False),
        ("mcp-http", "tool:set_alarm_state", False),
    ]
    assert events[0].before == {"bogus": 1}
    assert "scope" in events[1].after["error"]
    calls = httpx.get(daphne_server + "/metrics").text
    assert (
        'homehub_mcp_tool_calls_total{interface="mcp-http",outcome="ok",tool="get_alarm_status"} 1.0' in calls
    )


def test_read_calls_are_kept_on_demand(live_env, make_token):
    token = make_token(scopes=["read"], name="reader")
    with running_hub(live_env, AUDIT_READ_CALLS="1") as hub:
        session = post(hub.base, INIT, token).headers["mcp-session-id"]
        post(hub.base, call("get_alarm_status", {}), token, session)
    [event] = Event.objects.filter(actor="reader", action="tool.call")
    assert (event.target, event.after["ok"]) == ("tool:get_alarm_status", True)


def test_audit_rows_survive_a_kill_right_after_the_answer(daphne_process, make_token):
    """Nothing waits in memory: what was answered is in the database, even if the process
    is killed (SIGKILL, no shutdown handler) the moment the answer arrives."""
    base, proc = daphne_process
    token = make_token(scopes=["read", "control"], name="last-words")
    session = post(base, INIT, token).headers["mcp-session-id"]
    post(base, call("get_alarm_status", {"bogus": 1}), token, session)
    post(base, call("set_light_state", {"name": "garage", "on": True}, 3), token, session)
    proc.kill()
    proc.wait(10)
    audited = Event.objects.filter(actor="last-words")
    assert sorted(audited.values_list("action", "target")) == [
        ("light.set", "light:garage"),
        ("tool.call", "tool:get_alarm_status"),
    ]
    assert audited.get(action="light.set").interface == "mcp-http"


def result_of(response) -> dict:
    return sse_messages(response.text)[-1]["result"]


def test_two_processes_never_serve_a_stale_home(daphne_server, second_daphne, make_token):
    """A change made through one hub process is what the other answers next, at once."""
    a, b = daphne_server, second_daphne[0]
    token = make_token()
    session_a = post(a, INIT, token).headers["mcp-session-id"]
    session_b = post(b, INIT, token).headers["mcp-session-id"]
    for on in (True, False, True):
        assert result_of(post(b, call("get_all_states", {}), token, session_b))["structuredContent"]
        post(a, call("set_light_state", {"name": "cocina", "on": on}), token, session_a)
        states = result_of(post(b, call("get_all_states", {}), token, session_b))["structuredContent"]
        assert states["lights"]["cocina"] is on
        lights_on = result_of(post(b, call("list_lights_on", {}), token, session_b))["structuredContent"]
        assert ("cocina" in lights_on["on"]) is on


def test_a_session_ended_through_another_process_ends_within_the_bound(
    daphne_server, second_daphne, make_token
):
    a, b = daphne_server, second_daphne[0]
    token = make_token()
    session = post(a, INIT, token).headers["mcp-session-id"]
    assert post(b, call("get_alarm_status", {}), token, session).status_code == 200  # b knows it now
    assert post(a, call("get_alarm_status", {}), token, session).status_code == 200
    ended_at = time.monotonic()
    assert (
        httpx.delete(
            a + "/mcp", headers={"authorization": f"Bearer {token}", "mcp-session-id": session}
        ).status_code
        == 204
    )
    assert post(a, call("get_alarm_status", {}), token, session).status_code == 404  # at once where it ended
    while post(b, call("get_alarm_status", {}), token, session).status_code != 404:
        assert time.monotonic() - ended_at < settings.MCP_AUTH_CACHE_SECONDS + 1, "ended session served on"
        time.sleep(0.1)
