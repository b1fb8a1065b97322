"""Resources, subscriptions and prompts: in-process, and live across transports."""

import asyncio
import json

import httpx
import pytest
from asgiref.sync import async_to_sync
from websockets.asyncio.client import connect

from devices.home import services
from mcp_endpoint.engine import jsonrpc
from tests.mcp_endpoint.test_mcp_engine import run
from tests.mcp_endpoint.test_mcp_http import ACCEPT, INIT, post
from tests.mcp_endpoint.test_mcp_websocket import rpc, ws_url
from tests.mcp_helpers import MODERN_META, Peer, call


def test_resources_list_read_and_templates(home):
    async def scenario():
        peer = Peer(scopes={"read"})
        await peer.initialize()
        return (
            (await peer.request("resources/list"))["result"],
            (await peer.request("resources/templates/list"))["result"],
            (await peer.request("resources/read", {"uri": "home://lights/salon"}))["result"],
            (await peer.request("resources/read", {"uri": "home://state"}))["result"],
            await peer.request("resources/read", {"uri": "home://lights/sotano"}),
            (await peer.request("resources/list", {"_meta": MODERN_META}))["result"],
        )

    listed, templates, salon, state, missing, stateless = run(scenario)
    uris = {r["uri"] for r in listed["resources"]}
    assert {
        "home://state",
        "home://alarm",
        "home://presence",
        "home://sensors/latest",
        "home://lights/cocina",
    } <= uris
    assert templates["resourceTemplates"][0]["uriTemplate"] == "home://lights/{name}"
    assert json.loads(salon["contents"][0]["text"]) == {
        "name": "salon",
        "label": "Salón",
        "room": "Salón",
        "on": False,
    }
    assert json.loads(state["contents"][0]["text"])["alarm"] is False
    assert missing["error"]["code"] == jsonrpc.INVALID_PARAMS
    assert stateless["resultType"] == "complete" and "ttlMs" in stateless


def test_resources_need_the_read_scope(home):
    async def scenario():
        peer = Peer(scopes={"fel"})
        await peer.initialize()
        return (
            (await peer.request("resources/list"))["result"],
            await peer.request("resources/read", {"uri": "home://state"}),
            (await peer.request("prompts/list"))["result"],
        )

    listed, refused, prompts = run(scenario)
    assert listed["resources"] == [] and prompts["prompts"] == []
    assert refused["error"]["code"] == jsonrpc.INVALID_PARAMS


def test_subscription_hears_only_its_resources(home):
    async def scenario():
        peer = Peer()
        await peer.initialize()
        await peer.request("resources/subscribe", {"uri": "home://alarm"})
        await peer.session.on_change({"kind": "light", "name": "salon"})
        await peer.session.on_change({"kind": "alarm", "armed": True})
        await peer.request("resources/unsubscribe", {"uri": "home://alarm"})
        await peer.session.on_change({"kind": "alarm", "armed": False})
        return [m for m in peer.sent if m.get("method")]

    assert run(scenario) == [
        {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": "home://alarm"}}
    ]


def test_home_summary_prompt(home):
    services.set_light_state("cocina", True, actor="t", interface="rest")

    async def scenario():
        peer = Peer()
        await peer.initialize()
        listed = (await peer.request("prompts/list"))["result"]["prompts"]
        got = await peer.request(
            "prompts/get", {"name": "home_summary", "arguments": {"language": "English"}}
        )
        unknown = await peer.request("prompts/get", {"name": "nope"})
        return listed, got["result"], unknown

    listed, got, unknown = run(scenario)
    assert [p["name"] for p in listed] == ["home_summary"]
    text = got["messages"][0]["content"]["text"]
    assert '"cocina": true' in text and "English" in text
    assert unknown["error"]["code"] == jsonrpc.INVALID_PARAMS


@pytest.mark.live
def test_websocket_subscriber_hears_a_change_made_over_http(daphne_server, make_token):
    watcher, actor = make_token(name="watcher"), make_token(name="actor")

    async def scenario():
        headers = {"Authorization": f"Bearer {watcher}"}
        async with connect(ws_url(daphne_server), additional_headers=headers) as ws:
            await rpc(ws, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})
            await rpc(
                ws,
                {
                    "jsonrpc": "2.0",
                    "id": 2,
                    "method": "resources/subscribe",
                    "params": {"uri": "home://lights/salon"},
                },
            )
            session = post(daphne_server, INIT, actor).headers["mcp-session-id"]
            async with httpx.AsyncClient() as http:
                await http.post(
                    daphne_server + "/mcp",
                    json=call("set_light_state", {"name": "salon", "on": True}),
                    headers={
                        "authorization": f"Bearer {actor}",
                        "mcp-session-id": session,
                        "accept": "application/json, text/event-stream",
                    },
                )
            loop = asyncio.get_running_loop()
            start = loop.time()
            message = json.loads(await asyncio.wait_for(ws.recv(), 5))
            return message, loop.time() - start

    message, waited = async_to_sync(scenario)()
    assert message == {
        "jsonrpc": "2.0",
        "method": "notifications/resources/updated",
        "params": {"uri": "home://lights/salon"},
    }
    assert waited < 1.0


@pytest.mark.live
def test_get_stream_hears_updates_after_a_post_subscription(daphne_server, make_token):
    token = make_token()
    session = post(daphne_server, INIT, token).headers["mcp-session-id"]
    subscribe = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "resources/subscribe",
        "params": {"uri": "home://lights/salon"},
    }
    post(daphne_server, subscribe, token, session)
    headers = {"authorization": f"Bearer {token}", "mcp-session-id": session, "accept": "text/event-stream"}

    async def scenario():
        async with (
            httpx.AsyncClient(timeout=10) as http,
            http.stream("GET", daphne_server + "/mcp", headers=headers) as stream,
        ):
            assert stream.status_code == 200
            assert stream.headers["content-type"].startswith("text/event-stream")
            await asyncio.sleep(0.3)  # let the stream join the change group
            other = post(daphne_server, INIT, token).headers["mcp-session-id"]
            changed = await http.post(
                daphne_server + "/mcp",
                json=call("set_light_state", {"name": "salon", "on": True}),
                headers={"authorization": f"Bearer {token}", "mcp-session-id": other, "accept": ACCEPT},
            )
            assert changed.status_code == 200

            async def first_update():
                async for line in stream.aiter_lines():
                    if line.startswith("data:") and "resources/updated" in line:
                        return json.loads(line[5:])

            return await asyncio.wait_for(first_update(), 5)

    assert async_to_sync(scenario)() == {
        "jsonrpc": "2.0",
        "method": "notifications/resources/updated",
        "params": {"uri": "home://lights/salon"},
    }
