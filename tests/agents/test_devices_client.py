"""The MCP client the hub uses with devices, and the gateway's tool names (no network)."""

import asyncio
import re

import pytest
from asgiref.sync import async_to_sync

from devices.agents.names import exposed_name
from mcp_endpoint.client.mcp_client import ConnectionLost, McpClient, RemoteError, RequestTimeout


class FakeDevice:
    """Answers what the client sends, page by page, the way the firmware does."""

    def __init__(self, pages: dict[str, dict], errors: dict[str, dict] | None = None) -> None:
        self.pages = pages
        self.errors = errors or {}
        self.sent: list[dict] = []
        self.client = McpClient(self.send, timeout=1)

    async def send(self, payload: dict) -> None:
        self.sent.append(payload)
        method = payload["method"]
        if method == "tools/list":
            reply = {"result": self.pages[payload["params"]["cursor"]]}
        elif method in self.errors:
            reply = {"error": self.errors[method]}
        else:
            return  # never answers
        asyncio.get_running_loop().call_soon(
            lambda: asyncio.ensure_future(self.client.feed({"jsonrpc": "2.0", "id": payload["id"], **reply}))
        )


def test_pages_follow_next_cursor_until_it_is_absent():
    device = FakeDevice(
        {
            "": {"tools": [{"name": "self.a"}], "nextCursor": "self.b"},
            "self.b": {"tools": [{"name": "self.b"}, {"name": "self.c"}], "nextCursor": "self.d"},
            "self.d": {"tools": [{"name": "self.d"}]},
        }
    )
    tools = async_to_sync(device.client.list_tools)()
    assert [t["name"] for t in tools] == ["self.a", "self.b", "self.c", "self.d"]
    assert [p["params"]["cursor"] for p in device.sent] == ["", "self.b", "self.d"]
    assert [p["id"] for p in device.sent] == [1, 2, 3]  # integers: the firmware ignores any other id


def test_a_cursor_that_repeats_is_an_error_not_a_loop():
    device = FakeDevice({"": {"tools": [], "nextCursor": "x"}, "x": {"tools": [], "nextCursor": "x"}})
    with pytest.raises(RemoteError, match="repeats"):
        async_to_sync(device.client.list_tools)()


def test_errors_with_and_without_code():
    device = FakeDevice(
        {},
        errors={
            "tools/call": {"message": "Unknown tool: self.nope"},
            "initialize": {"code": -32601, "message": "Method not implemented"},
        },
    )

    async def scenario():
        with pytest.raises(RemoteError) as without_code:
            await device.client.call_tool("self.nope", {})
        with pytest.raises(RemoteError) as with_code:
            await device.client.initialize({}, {"name": "t", "version": "1"})
        return without_code.value, with_code.value

    without_code, with_code = async_to_sync(scenario)()
    assert (without_code.code, without_code.message) == (None, "Unknown tool: self.nope")
    assert (with_code.code, with_code.message) == (-32601, "Method not implemented")


def test_timeout_and_close_fail_pending_requests():
    device = FakeDevice({})

    async def scenario():
        with pytest.raises(RequestTimeout):
            await device.client.call_tool("self.slow", {}, timeout=0.05)
        assert device.client.pending == 0
        waiting = asyncio.ensure_future(device.client.call_tool("self.slow", {}, timeout=30))
        await asyncio.sleep(0.01)
        started = asyncio.get_running_loop().time()
        device.client.close("the device disconnected")
        with pytest.raises(ConnectionLost, match="disconnected"):
            await waiting
        with pytest.raises(ConnectionLost):
            await device.client.call_tool("self.after", {})
        return asyncio.get_running_loop().time() - started

    assert async_to_sync(scenario)() < 0.5


def test_notifications_and_stray_responses():
    seen = []

    async def on_notification(method, params):
        seen.append((method, params))

    async def scenario():
        client = McpClient(lambda payload: asyncio.sleep(0), on_notification=on_notification)
        await client.feed(
            {"jsonrpc": "2.0", "method": "notifications/state_changed", "params": {"newState": "idle"}}
        )
        await client.feed({"jsonrpc": "2.0", "id": 99, "result": {}})  # nobody asked: ignored
        await client.feed("not an object")

    async_to_sync(scenario)()
    assert seen == [("notifications/state_changed", {"newState": "idle"})]


def test_exposed_names_are_valid_unique_and_bounded():
    pattern = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
    assert exposed_name("aa:bb:cc:dd:ee:ff", "self.audio_speaker.set_volume") == (
        "aa_bb_cc_dd_ee_ff__self_audio_speaker_set_volume"
    )
    long = exposed_name("kitchen-speaker-with-a-very-long-name", "self.screen.some_extremely_long_tool_name")
    assert pattern.match(long) and len(long) == 64
    clash = {exposed_name("a", "self.x_y", hashed=True), exposed_name("a", "self.x.y", hashed=True)}
    assert len(clash) == 2 and all(pattern.match(n) for n in clash)
