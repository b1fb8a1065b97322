"""Outbound MCP endpoints (xiaozhi): the hub connects out to a local WebSocket server playing
xiaozhi's endpoint, which initializes, lists the chosen tools only and calls them; the
supervisor reconnects, follows the table's changes and holds each endpoint in one process; the
token stays out of the logs and the status."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest
from asgiref.sync import async_to_sync, sync_to_async

from audit.models import Event
from devices.home.models import Light
from devices.home.services import seed_home
from mcp_endpoint.models import OutboundEndpoint
from mcp_endpoint.transports.outbound.endpoints import save_endpoint
from mcp_endpoint.transports.outbound.supervisor import Supervisor
from tests.xiaozhi_support import LOGGER, TOKEN, FakeXiaozhi

DEFAULT_TOOLS = [
    "list_lights_on",
    "set_light_state",
    "get_alarm_status",
    "get_presence",
    "get_all_states",
    "get_sensor_values",
]


@pytest.fixture
def house(transactional_db, settings):
    """Seed 000's home, committed (the supervisor's writes run in Django's database thread),
    rounds every 0.2 s, and the in-memory channel layer (the device gateway the supervisor
    starts must not leave the database layer's thread behind the test)."""
    settings.MCP_ENDPOINT_POLL_SECONDS = 0.2
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    seed_home()


def add(name: str, url: str, **options) -> OutboundEndpoint:
    options.setdefault("scopes", "read,control")
    options.setdefault("tools", DEFAULT_TOOLS)
    return save_endpoint(name, url, actor="test", interface="system", **options)[0]


async def row(name: str) -> OutboundEndpoint:
    return await OutboundEndpoint.objects.aget(name=name)


async def eventually(check, timeout: float = 10.0):
    """Until `check()` (sync, run with database access) returns something true; that."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        found = await sync_to_async(check)()
        if found:
            return found
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"not seen in {timeout} s")
        await asyncio.sleep(0.05)


def hub_log(records: list[logging.LogRecord]) -> list[str]:
    """The hub's log lines (the fake endpoint's own are left out)."""
    return [record.getMessage() for record in records if not record.name.startswith(LOGGER)]


def test_xiaozhi_lists_the_chosen_tools_switches_a_light_audited_and_the_hub_reconnects(house, caplog):
    caplog.set_level(logging.DEBUG)

    async def scenario():
        async with FakeXiaozhi() as xiaozhi:
            await sync_to_async(add)("kitchen speaker", xiaozhi.url)
            supervisor = Supervisor()
            await supervisor.start()
            try:
                client = await xiaozhi.connection()
                init = await client.initialize(id=1)
                names = await client.tool_names()
                switched = await client.call("set_light_state", {"name": "garage", "on": True})
                hidden = await client.call("set_alarm_state", {"armed": False})
                pong = await client.request("ping")
                status = await eventually(
                    lambda: OutboundEndpoint.objects.filter(calls=2, connected=True).first()
                )

                await client.ws.close()  # xiaozhi drops the connection: the hub comes back
                again = await xiaozhi.connection()
                reinit = await again.initialize(id=1)  # ids start over on a new connection
                listed_again = await again.tool_names()
                dropped = await row("kitchen speaker")
            finally:
                await supervisor.stop()
            released = await row("kitchen speaker")
            return init, names, switched, hidden, pong, status, reinit, listed_again, dropped, released

    init, names, switched, hidden, pong, status, reinit, listed_again, dropped, released = async_to_sync(
        scenario
    )()
    assert init["result"]["protocolVersion"] == "2024-11-05"
    assert init["result"]["serverInfo"]["name"] == "homehub"
    assert sorted(names) == sorted(DEFAULT_TOOLS) == sorted(listed_again)
    assert switched["result"]["structuredContent"] == {"ok": True}
    assert Light.objects.get(name="garage").on is True
    assert Event.objects.filter(
        actor="kitchen speaker", interface="mcp-endpoint", action="light.set", target="light:garage"
    ).exists()
    assert hidden["error"] == {"code": -32602, "message": "Unknown tool: set_alarm_state"}
    assert pong["result"] == {}
    assert status.connected_since is not None and status.last_call_at is not None
    assert reinit["result"]["protocolVersion"] == "2024-11-05"
    assert dropped.connected and dropped.last_error == ""  # connected again: the error is cleared
    assert not released.connected and released.holder == ""
    lines = hub_log(caplog.records)
    assert any(line.startswith("> GET /mcp/?token=… HTTP/1.1") for line in lines)  # the library's, redacted
    assert any(
        "kitchen speaker: connected to ws://127.0.0.1:" in line and "token=…" in line for line in lines
    )
    assert any("the endpoint closed the connection" in line for line in lines)
    assert not [line for line in lines if TOKEN in line]


def test_bad_frames_get_json_rpc_errors_and_the_connection_survives(house, settings):
    settings.MCP_MAX_MESSAGE_BYTES = 2000

    async def scenario():
        async with FakeXiaozhi() as xiaozhi:
            await sync_to_async(add)("kitchen", xiaozhi.url)
            supervisor = Supervisor()
            await supervisor.start()
            try:
                client = await xiaozhi.connection()
                await client.initialize()
                answers = {
                    "not json": await client.raw("{broken"),
                    "binary": await client.raw(b"\x00\x01binary"),
                    "too large": await client.raw(json.dumps({"jsonrpc": "2.0", "id": 7, "pad": "x" * 2500})),
                    "not an object": await client.raw("[1, 2]"),
                    "bad id": await client.raw('{"jsonrpc": "2.0", "id": {}, "method": "ping"}'),
                    "bad params": await client.raw(
                        '{"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": 3}'
                    ),
                    "no name": await client.request("tools/call", {"arguments": {}}, id="n"),
                    "bad arguments": await client.call("set_light_state", {"name": 5, "on": "maybe"}),
                    "unknown method": await client.request("resources/unknown", id="u"),
                }
                still = await client.request("ping")
                connections = xiaozhi.accepted

                await client.ws.send("x" * 4500)  # past twice the limit: the library closes (1009)
                await client.ws.wait_closed()
                dropped = await eventually(
                    lambda: OutboundEndpoint.objects.filter(name="kitchen", connected=False).first()
                )
                again = await xiaozhi.connection()
                await again.initialize()
                after = await again.request("ping")
                error = dropped.last_error
            finally:
                await supervisor.stop()
            return answers, still, connections, after, error

    answers, still, connections, after, error = async_to_sync(scenario)()
    codes = {
        what: (answer.get("id"), answer["error"]["code"])
        for what, answer in answers.items()
        if "error" in answer
    }
    assert codes == {
        "not json": (None, -32700),
        "binary": (None, -32600),
        "too large": (None, -32600),
        "not an object": (None, -32600),
        "bad id": (None, -32600),
        "bad params": (8, -32600),
        "no name": ("n", -32602),
        "unknown method": ("u", -32601),
    }
    assert "binary frames are not MCP" in answers["binary"]["error"]["message"]
    assert "larger than 2000 bytes" in answers["too large"]["error"]["message"]
    assert answers["bad arguments"]["result"]["isError"] is True
    assert still["result"] == {} and connections == 1
    assert after["result"] == {}
    assert error.startswith("the hub closed the connection (sent 1009 (message too big)"), error
    assert Light.objects.filter(on=True).count() == 0


def test_of_two_hub_processes_one_holds_the_endpoint_and_the_other_takes_over(house):
    """Two supervisors over one database (as two `serve` processes): one connection; when its
    holder stops, the other connects within a few rounds."""

    async def scenario():
        async with FakeXiaozhi() as xiaozhi:
            await sync_to_async(add)("kitchen", xiaozhi.url)
            first, second = Supervisor("hub-a"), Supervisor("hub-b")
            await first.start()
            await second.start()
            try:
                await xiaozhi.connection()
                await asyncio.sleep(1.0)  # five rounds of each
                alone = xiaozhi.accepted
                holder = (await row("kitchen")).holder
                held, other = (first, second) if holder == "hub-a" else (second, first)
                await held.stop()
                taken = await xiaozhi.connection()
                await taken.initialize()
                new_holder = await eventually(
                    lambda: (
                        OutboundEndpoint.objects.filter(connected=True)
                        .values_list("holder", flat=True)
                        .first()
                    )
                )
            finally:
                await first.stop()
                await second.stop()
            return alone, holder, other.holder, new_holder

    alone, holder, other, new_holder = async_to_sync(scenario)()
    assert alone == 1 and holder in {"hub-a", "hub-b"}
    assert new_holder == other != holder


def test_endpoints_added_changed_disabled_and_removed_while_serving(house):
    async def scenario():
        async with FakeXiaozhi() as xiaozhi:
            supervisor = Supervisor()
            await supervisor.start()
            try:
                await sync_to_async(add)("kitchen", xiaozhi.url, enabled=False)
                await asyncio.sleep(0.6)
                while_disabled = xiaozhi.accepted
                await sync_to_async(add)("kitchen", xiaozhi.url)  # enabled: connects
                first = await xiaozhi.connection()
                await first.initialize()
                before = await first.tool_names()
                await sync_to_async(add)("kitchen", xiaozhi.url, tools="get_presence,set_alarm_state")
                await first.ws.wait_closed()  # changed: the hub connects again with the new tools
                second = await xiaozhi.connection()
                await second.initialize()
                after = await second.tool_names()
                await sync_to_async(add)("kitchen", xiaozhi.url, tools="get_presence", enabled=False)
                await second.ws.wait_closed()
                disabled = await row("kitchen")
                await sync_to_async(add)("kitchen", xiaozhi.url)
                third = await xiaozhi.connection()
                await OutboundEndpoint.objects.filter(name="kitchen").adelete()
                await third.ws.wait_closed()
                await asyncio.sleep(0.6)
                accepted = xiaozhi.accepted
            finally:
                await supervisor.stop()
            return while_disabled, before, after, disabled, accepted

    while_disabled, before, after, disabled, accepted = async_to_sync(scenario)()
    assert while_disabled == 0
    assert sorted(before) == sorted(DEFAULT_TOOLS)
    assert sorted(after) == ["get_presence", "set_alarm_state"]
    assert not disabled.connected and disabled.holder == ""
    assert accepted == 3


def test_a_refused_token_is_the_last_error_without_the_token_and_retried(house, caplog):
    caplog.set_level(logging.DEBUG)

    async def scenario():
        async with FakeXiaozhi() as xiaozhi:
            wrong = xiaozhi.url.replace(TOKEN, TOKEN[::-1])
            await sync_to_async(add)("kitchen", wrong)
            supervisor = Supervisor()
            await supervisor.start()
            try:
                failed = await eventually(lambda: OutboundEndpoint.objects.exclude(last_error="").first())
                await asyncio.sleep(1.5)  # retried after 1 s
            finally:
                await supervisor.stop()
            return failed, xiaozhi.refused

    failed, refused = async_to_sync(scenario)()
    assert (
        failed.last_error
        == "could not connect: InvalidStatus: server rejected WebSocket connection: HTTP 401"
    )
    assert not failed.connected and refused >= 2
    lines = hub_log(caplog.records)
    assert any(
        "kitchen (ws://127.0.0.1:" in line and "HTTP 401; connecting again in 1 s" in line for line in lines
    )
    assert not [line for line in lines if TOKEN[::-1] in line]


def test_a_token_in_the_path_is_masked_and_redacted_too(house, caplog, staff_client, settings):
    """Served from its path (`/mcp/<token>/`): the Devices page, the admin, /metrics and the
    logs show the URL with that segment masked, and never the token."""
    settings.METRICS_PUBLIC = True
    caplog.set_level(logging.DEBUG)
    shown = ("/devices/", "/admin/mcp_endpoint/outboundendpoint/", "/metrics")

    async def scenario():
        async with FakeXiaozhi(in_path=True) as xiaozhi:
            await sync_to_async(add)("hall speaker", xiaozhi.url)
            supervisor = Supervisor()
            await supervisor.start()
            try:
                await (await xiaozhi.connection()).initialize(id=1)
                await eventually(lambda: OutboundEndpoint.objects.filter(connected=True).first())
                return await sync_to_async(
                    lambda: [staff_client.get(url).content.decode() for url in shown]
                )()
            finally:
                await supervisor.stop()

    devices, admin, metrics = async_to_sync(scenario)()
    assert "/mcp/…/</code>" in devices and "/mcp/…/" in admin
    assert 'homehub_mcp_endpoint_connected{endpoint="hall speaker"} 1.0' in metrics
    assert not [page for page in (devices, admin, metrics) if TOKEN in page]
    lines = hub_log(caplog.records)
    assert any(line.startswith("> GET /mcp/…/ HTTP/1.1") for line in lines)  # the library's, redacted
    assert any("hall speaker: connected to ws://127.0.0.1:" in line and "/mcp/…/" in line for line in lines)
    assert not [line for line in lines if TOKEN in line]


def test_urls_are_checked_masked_and_redacted():
    from django.core.exceptions import ValidationError

    from mcp_endpoint.transports.outbound.endpoint_urls import mask_url, redact, validate_endpoint_url

    url = f"wss://api.xiaozhi.me/mcp/?token={TOKEN}"
    assert mask_url(url) == "wss://api.xiaozhi.me/mcp/?token=…"
    assert (
        mask_url("ws://user:pw@10.0.0.5:8004/mcp/?agent=3&token=abc")
        == "ws://…@10.0.0.5:8004/mcp/?agent=…&token=…"
    )
    assert mask_url("wss://h/mcp/") == "wss://h/mcp/"
    assert mask_url("wss://h/api/v2/mcp/") == "wss://h/api/v2/mcp/"  # words stay
    assert mask_url(f"wss://h/mcp/{TOKEN}/") == "wss://h/mcp/…/"  # a token in the path does not
    assert mask_url("wss://h/ws/3f9c2a7b/call?x=1") == "wss://h/ws/…/call?x=…"
    in_path = "wss://h/mcp/3f9c2a7b1e4d4c0b9a8f/"
    assert (
        redact("GET /mcp/3f9c2a7b1e4d4c0b9a8f/ failed: " + in_path, in_path)
        == "GET /mcp/…/ failed: wss://h/mcp/…/"
    )
    assert redact(f"failed GET /mcp/?token={TOKEN} and {url}", url) == (
        "failed GET /mcp/?token=… and wss://api.xiaozhi.me/mcp/?token=…"
    )
    validate_endpoint_url(url)
    for bad in (
        "https://api.xiaozhi.me/mcp/?token=x",
        "wss:///mcp/?token=x",
        "wss://h/?token=a b",
        "wss://[::1/",
    ):
        with pytest.raises(ValidationError) as refused:
            validate_endpoint_url(bad)
        assert "token" not in " ".join(refused.value.messages)
