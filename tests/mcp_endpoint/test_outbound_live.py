"""'Talk to your home through xiaozhi', end to end: the endpoint added with `add_mcp_endpoint`,
`manage.py serve` (a real process, logging at DEBUG) connects out to a local server playing
xiaozhi's endpoint, which initializes, lists the chosen tools, switches a light and drops the
connection; the hub comes back, and lets go of the endpoint when stopped. The token is in none
of the hub's output."""

from __future__ import annotations

import asyncio
import io

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.core.management import call_command

from audit.models import Event
from devices.home.models import Light
from mcp_endpoint.models import OutboundEndpoint
from tests.hub_support import HubProcess
from tests.mqtt_support import Process
from tests.xiaozhi_support import TOKEN, FakeXiaozhi

pytestmark = pytest.mark.live


def test_serve_keeps_a_xiaozhi_endpoint_connected_and_answers_it(live_env):
    env = {**live_env, "MCP_ENDPOINT_POLL_SECONDS": "0.5", "HOMEHUB_LOG_LEVEL": "DEBUG"}
    hub = HubProcess(env, serve_args=("--no-mqtt",))

    async def scenario():
        async with FakeXiaozhi() as xiaozhi:
            added = io.StringIO()
            await sync_to_async(call_command)("add_mcp_endpoint", "living room", xiaozhi.url, stdout=added)
            await asyncio.to_thread(hub.start)
            try:
                client = await xiaozhi.connection(timeout=30)
                init = await client.initialize()
                names = await client.tool_names()
                switched = await client.call("set_light_state", {"name": "salon", "on": True})

                client.ws.transport.abort()  # the network drops: no close frame
                again = await xiaozhi.connection(timeout=30)
                await again.initialize()
                states = await again.call("get_all_states", {})
            finally:
                await asyncio.to_thread(hub.stop)
            return added.getvalue(), init, names, switched, states

    try:
        added, init, names, switched, states = async_to_sync(scenario)()
        output = hub.output()
    finally:
        hub.close()
    assert "Endpoint 'living room' added" in added and "token=…" in added
    assert init["result"]["serverInfo"]["name"] == "homehub"
    assert names == [
        "get_presence",
        "get_alarm_status",
        "list_lights_on",
        "set_light_state",
        "get_all_states",
        "get_sensor_values",
    ]
    assert switched["result"]["structuredContent"] == {"ok": True}
    assert Light.objects.get(name="salon").on is True
    assert states["result"]["structuredContent"]["lights"]["salon"] is True
    assert Event.objects.filter(actor="living room", interface="mcp-endpoint", target="light:salon").exists()
    endpoint = OutboundEndpoint.objects.get(name="living room")
    assert endpoint.calls == 2 and endpoint.last_call_at is not None  # the last ones counted on the way out
    assert not endpoint.connected and endpoint.holder == ""  # let go on the way out
    assert "MCP endpoint living room: connected to ws://127.0.0.1:" in output
    assert "> GET /mcp/?token=… HTTP/1.1" in output
    assert TOKEN not in output


def test_the_mcp_endpoints_command_does_it_beside_bare_daphne(live_env, tmp_path):
    env = {**live_env, "MCP_ENDPOINT_POLL_SECONDS": "0.5", "PYTHONUNBUFFERED": "1"}

    async def scenario():
        async with FakeXiaozhi() as xiaozhi:
            await sync_to_async(call_command)("add_mcp_endpoint", "hall", xiaozhi.url, stdout=io.StringIO())
            process = Process(["mcp_endpoints"], env, tmp_path / "endpoints.log")
            try:
                client = await xiaozhi.connection(timeout=30)
                await client.initialize()
                switched = await client.call("set_light_state", {"name": "cocina", "on": True})
            finally:
                code = await asyncio.to_thread(process.stop)
            return switched, code, process.output()

    switched, code, output = async_to_sync(scenario)()
    assert switched["result"]["structuredContent"] == {"ok": True} and code == 0
    assert Light.objects.get(name="cocina").on is True
    endpoint = OutboundEndpoint.objects.get(name="hall")
    assert endpoint.calls == 1 and not endpoint.connected and endpoint.holder == ""
    assert "MCP endpoint hall: connected to ws://127.0.0.1:" in output and TOKEN not in output
