"""MCP over WebSocket at /ws/mcp/ against a live daphne."""

import asyncio
import json

import pytest
from asgiref.sync import async_to_sync
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from audit.models import Event
from devices.home.models import Light

pytestmark = pytest.mark.live


def ws_url(base: str, query: str = "") -> str:
    return base.replace("http://", "ws://") + "/ws/mcp/" + query


async def rpc(ws, message):
    await ws.send(json.dumps(message))
    while True:
        answer = json.loads(await asyncio.wait_for(ws.recv(), 10))
        if answer.get("id") == message.get("id"):
            return answer


def test_initialize_list_and_call_over_websocket(daphne_server, make_token):
    token = make_token(name="ws-agent")

    async def scenario():
        headers = {"Authorization": f"Bearer {token}"}
        async with connect(ws_url(daphne_server), additional_headers=headers, subprotocols=["mcp"]) as ws:
            assert ws.subprotocol == "mcp"
            init = await rpc(
                ws,
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {"protocolVersion": "2025-06-18"},
                },
            )
            await ws.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            listed = await rpc(ws, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
            await ws.send("{broken")
            parse_error = json.loads(await asyncio.wait_for(ws.recv(), 10))
            called = await rpc(
                ws,
                {
                    "jsonrpc": "2.0",
                    "id": 3,
                    "method": "tools/call",
                    "params": {"name": "set_light_state", "arguments": {"name": "garage", "on": True}},
                },
            )
            return init, listed, parse_error, called

    init, listed, parse_error, called = async_to_sync(scenario)()
    assert init["result"]["protocolVersion"] == "2025-06-18"
    assert "get_all_states" in {t["name"] for t in listed["result"]["tools"]}
    assert parse_error["error"]["code"] == -32700 and parse_error["id"] is None
    assert called["result"]["structuredContent"] == {"ok": True}
    assert Light.objects.get(name="garage").on is True
    assert Event.objects.filter(actor="ws-agent", interface="mcp-ws", target="light:garage").exists()


def test_query_token_and_refusals(daphne_server, make_token):
    token = make_token(scopes=["read"])

    async def scenario():
        async with connect(ws_url(daphne_server, f"?token={token}")) as ws:
            ok = await rpc(ws, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})
            refused = await rpc(
                ws,
                {
                    "jsonrpc": "2.0",
                    "id": 2,
                    "method": "tools/call",
                    "params": {"name": "set_alarm_state", "arguments": {"armed": True}},
                },
            )
            await ws.send(b"\x00\x01binary")
            with pytest.raises(ConnectionClosed) as closed:
                await asyncio.wait_for(ws.recv(), 10)
        outcomes = [ok, refused, closed.value.rcvd.code]
        for query, headers in [
            ("?token=hh_bad_bad", {}),
            ("", {}),
            (f"?token={token}", {"Origin": "http://evil.example"}),
            # Another port of the hub's own host is another origin.
            (f"?token={token}", {"Origin": f"http://127.0.0.1:{int(daphne_server.rsplit(':', 1)[1]) + 1}"}),
        ]:
            try:
                async with connect(ws_url(daphne_server, query), additional_headers=headers) as ws:
                    await asyncio.wait_for(ws.recv(), 10)
                outcomes.append("accepted")
            except (InvalidStatus, ConnectionClosed):
                outcomes.append("refused")
        return outcomes

    ok, refused, binary_close, *refusals = async_to_sync(scenario)()
    assert ok["result"]["serverInfo"]["name"] == "homehub"
    assert refused["error"]["code"] == -32001
    assert binary_close == 4003  # 1003's twin: daphne may not send 1003 itself
    assert refusals == ["refused", "refused", "refused", "refused"]


def test_a_token_revoked_while_the_socket_is_open_stops_working(daphne_server, make_token):
    from django.conf import settings

    from mcp_endpoint.models import AccessToken

    token = make_token(name="ws-revoked")
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}

    async def scenario():
        headers = {"Authorization": f"Bearer {token}"}
        async with connect(ws_url(daphne_server), additional_headers=headers, subprotocols=["mcp"]) as ws:
            init = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"protocolVersion": "2025-11-25"},
            }
            assert "result" in await rpc(ws, init)
            assert await rpc(ws, ping) == {"jsonrpc": "2.0", "id": 2, "result": {}}
            # Revoked by another process than daphne's: refused within MCP_AUTH_CACHE_SECONDS.
            await asyncio.to_thread(
                lambda: AccessToken.objects.filter(name="ws-revoked").update(revoked=True)
            )
            loop = asyncio.get_running_loop()
            revoked_at = loop.time()
            with pytest.raises(ConnectionClosed) as closed:
                while loop.time() - revoked_at < settings.MCP_AUTH_CACHE_SECONDS + 1:
                    await rpc(ws, ping)
                    await asyncio.sleep(0.1)
            return closed.value.rcvd.code

    assert async_to_sync(scenario)() == 4401
