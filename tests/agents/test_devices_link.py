"""The device-link contract (devices/agents/link.py) with a transport of the test's own: what a
new transport implements is enough for the shared lifecycle (register, discovery, calls
through the gateway, a newer session taking over, cleanup at a server's shutdown)."""

from __future__ import annotations

import asyncio
from typing import Any
from unittest.mock import patch

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from audit.models import Event
from common.groups import receive_forever
from devices.agents import services as agent_services
from devices.agents.gateway import gateway
from devices.agents.link import DeviceLink, detach_all, local_links
from devices.agents.models import Agent, AgentTool
from devices.agents.outcomes import CallResult
from devices.agents.services import register_agent
from mcp_endpoint.engine.tools import Caller

AGENT = "pipe-device"


class PipeLink(DeviceLink):
    """A transport in a few lines: the device is a function of each request, answered at once."""

    def __init__(self, channel: str) -> None:
        super().__init__(AGENT, layer=get_channel_layer(), channel=channel)
        self.hung_up = False

    async def register(self) -> Agent | None:
        await agent_services.aagent_connected(self.agent_id, self.session_id, {"transport": "pipe"})
        return await Agent.objects.aget(agent_id=self.agent_id)

    async def send(self, payload: dict[str, Any]) -> None:
        assert self.client is not None
        result = {
            "initialize": {"serverInfo": {"name": "pipe"}, "capabilities": {"tools": {}}},
            "tools/list": {"tools": [{"name": "self.echo", "description": "Echo", "inputSchema": {}}]},
            "tools/call": {"content": [{"type": "text", "text": str(payload.get("params"))}]},
        }[payload["method"]]
        await self.client.feed({"jsonrpc": "2.0", "id": payload["id"], "result": result})

    async def hang_up(self) -> None:
        self.hung_up = True
        await self.detach("a newer session took over")


async def _connected(tasks: list[asyncio.Future[Any]]) -> PipeLink:
    layer = get_channel_layer()
    link = PipeLink(await layer.new_channel())
    tasks.append(asyncio.ensure_future(receive_forever(layer, link.channel, link.handle, "pipe")))
    assert await link.attach()
    return link


async def _tools_available() -> list[str]:
    for _ in range(100):
        names = [n async for n in AgentTool.objects.filter(available=True).values_list("name", flat=True)]
        if names:
            return names
        await asyncio.sleep(0.05)
    return []


@pytest.mark.django_db(transaction=True)
def test_a_new_transport_needs_only_register_send_and_hang_up():
    register_agent(AGENT, transport="ws", actor="test", interface=Event.Interface.SYSTEM)

    async def scenario() -> tuple[Any, ...]:
        tasks: list[asyncio.Future[Any]] = []
        try:
            first = await _connected(tasks)
            discovered = await _tools_available()
            result = await gateway.call(AGENT, "self.echo", {"n": 1}, Caller("tester", "mcp-stdio"))
            second = await _connected(tasks)  # the device reconnects: the first steps aside
            state = (first.hung_up, first.detached, local_links.get(AGENT) is second)
            await detach_all("the hub is stopping")
            return discovered, result, state, second.detached, AGENT in local_links
        finally:
            for task in tasks:
                task.cancel()

    discovered, result, state, second_detached, still_here = async_to_sync(scenario)()
    assert discovered == ["self.echo"]
    assert result == CallResult(
        content=[{"type": "text", "text": "{'name': 'self.echo', 'arguments': {'n': 1}}"}]
    )
    assert state == (True, True, True)
    assert second_detached and not still_here
    agent = Agent.objects.get(agent_id=AGENT)
    assert not agent.online and agent.session_id == ""
    assert Event.objects.filter(action="agent.disconnect").count() == 1  # the second's, at shutdown


def test_a_shutdown_with_no_device_connected_touches_nothing():
    """No database here (pytest-django refuses it): with nothing to clean, the shutdown path
    must not need one."""
    with patch.dict(local_links, clear=True):
        async_to_sync(detach_all)("the hub is stopping")
