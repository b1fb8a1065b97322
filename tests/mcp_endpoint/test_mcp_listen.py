"""2026-07-28 `subscriptions/listen`: in the engine, and over Streamable HTTP against a live
daphne, where a change made through another request reaches the listening stream."""

import asyncio
import json

import httpx
import pytest
from asgiref.sync import async_to_sync

from mcp_endpoint.engine import jsonrpc
from mcp_endpoint.engine.listen import META_SUBSCRIPTION_ID
from mcp_endpoint.engine.registry import ToolRegistry
from tests.mcp_helpers import MODERN_META, Peer, sdk_client


def _listen(id: int, **wanted) -> dict:
    params = {"notifications": wanted, "_meta": MODERN_META}
    return {"jsonrpc": "2.0", "id": id, "method": "subscriptions/listen", "params": params}


def _method(name: str):
    return lambda m: m.get("method") == name


def test_acknowledges_then_forwards_only_what_was_asked_tagged_with_the_request_id(home):
    tools = ToolRegistry()

    async def scenario():
        peer = Peer(scopes={"read"}, tools=tools)
        uris = ["home://alarm", "nada://cosa", "home://alarm"]
        await peer.session.receive(_listen(7, toolsListChanged=True, resourceSubscriptions=uris), parsed=True)
        ack = await peer.wait_for(_method("notifications/subscriptions/acknowledged"))
        await peer.session.on_change({"kind": "light", "name": "salon"})  # not listened to
        await peer.session.on_change({"kind": "alarm", "armed": True})
        updated = await peer.wait_for(_method("notifications/resources/updated"))
        tools.notify_changed()
        changed = await peer.wait_for(_method("notifications/tools/list_changed"))
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}}
        await peer.session.receive(cancel, parsed=True)
        await peer.session.drain()
        return peer.sent, ack, updated, changed

    sent, ack, updated, changed = async_to_sync(scenario)()
    assert sent[0] is ack  # the acknowledgement comes first
    assert ack["params"] == {
        "notifications": {"toolsListChanged": True, "resourceSubscriptions": ["home://alarm"]},
        "_meta": {META_SUBSCRIPTION_ID: 7},
    }
    assert updated["params"] == {"uri": "home://alarm", "_meta": {META_SUBSCRIPTION_ID: 7}}
    assert changed["params"] == {"_meta": {META_SUBSCRIPTION_ID: 7}}
    assert len([m for m in sent if m.get("method") == "notifications/resources/updated"]) == 1
    assert not [m for m in sent if m.get("id") == 7]  # cancelled: no response


def test_bad_filters_and_handshake_sessions_are_refused():
    async def scenario():
        peer = Peer()
        bad = await peer.session.handle(_listen(1, resourceSubscriptions="home://alarm"))
        await peer.initialize()
        handshake = await peer.request("subscriptions/listen", {"notifications": {}}, id=2)
        return bad, handshake

    bad, handshake = async_to_sync(scenario)()
    assert (
        bad["error"]["code"] == jsonrpc.INVALID_PARAMS and "resourceSubscriptions" in bad["error"]["message"]
    )
    assert handshake["error"]["code"] == jsonrpc.METHOD_NOT_FOUND


@pytest.mark.live
def test_a_listening_http_client_hears_a_change_made_through_another_request(daphne_server, make_token):
    token = make_token()
    headers = {
        "authorization": f"Bearer {token}",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2026-07-28",
    }

    async def scenario():
        async with httpx.AsyncClient(timeout=10) as http:
            listen = _listen(3, resourceSubscriptions=["home://lights/salon"])
            listening = http.stream(
                "POST",
                daphne_server + "/mcp",
                json=listen,
                headers={**headers, "mcp-method": "subscriptions/listen"},
            )
            async with listening as response:
                lines = response.aiter_lines()

                async def next_message() -> dict:
                    async for line in lines:
                        if line.startswith("data:") and line[5:].strip():
                            return json.loads(line[5:])
                    raise AssertionError("the listen stream ended")

                ack = await next_message()
                await asyncio.sleep(0.3)  # let the stream join the change group
                arm = {
                    "name": "set_light_state",
                    "arguments": {"name": "salon", "on": True},
                    "_meta": MODERN_META,
                }
                call = {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": arm}
                extra = {"mcp-method": "tools/call", "mcp-name": "set_light_state"}
                called = await http.post(daphne_server + "/mcp", json=call, headers={**headers, **extra})
                return response.status_code, ack, called.status_code, await next_message()

    async def bounded():
        return await asyncio.wait_for(scenario(), 30)

    status, ack, called, updated = async_to_sync(bounded)()
    assert status == 200 and called == 200
    assert ack["method"] == "notifications/subscriptions/acknowledged"
    assert ack["params"]["notifications"] == {"resourceSubscriptions": ["home://lights/salon"]}
    assert updated == {
        "jsonrpc": "2.0",
        "method": "notifications/resources/updated",
        "params": {"uri": "home://lights/salon", "_meta": {META_SUBSCRIPTION_ID: 3}},
    }


@pytest.mark.live
def test_the_official_sdk_client_listens(daphne_server, make_token):
    from mcp.shared.subscriptions import ResourceUpdated

    token = make_token()

    async def scenario():
        async with (
            sdk_client(daphne_server, token, mode="auto") as client,
            client.listen(resource_subscriptions=["home://lights/salon"]) as subscription,
        ):
            await asyncio.sleep(0.3)  # let the stream join the change group
            await client.call_tool("set_light_state", {"name": "salon", "on": True})
            event = await asyncio.wait_for(anext(aiter(subscription)), 10)
            return subscription.honored, event

    honored, event = async_to_sync(scenario)()
    assert honored.resource_subscriptions == ["home://lights/salon"]
    assert event == ResourceUpdated(uri="home://lights/salon")
