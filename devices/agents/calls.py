"""Calling an ESP32 agent's tool from the dashboard or the REST API, through the gateway.

The gateway (`devices.agents.gateway`) routes the call to whichever hub process holds the
device's connection and audits it; this module adapts it for sync views, and gives each
outcome type its HTTP status (`http_status`), which the REST API and the dashboard answer.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from typing import Any

from asgiref.sync import async_to_sync

from devices.agents.gateway import gateway
from devices.agents.outcomes import (
    CallFailed,
    CallRefused,
    DeviceError,
    DeviceGone,
    DeviceTimeout,
    HubStopping,
    UnknownAgent,
    UnknownTool,
    absent,
)
from devices.agents.selectors import aagent_presence
from mcp_endpoint.registry import Caller

STOP_CHECK_SECONDS = 0.25  # how often a waiting thread checks that the serving loop still runs

HTTP_STATUS: dict[type[CallFailed], int] = {
    UnknownAgent: 404,
    UnknownTool: 404,
    CallRefused: 409,  # not approved: the agent's state, not the request, stands in the way
    DeviceGone: 409,  # offline, or gone mid-call: call again once it is back
    DeviceError: 502,  # the device answered with an error
    HubStopping: 503,
    DeviceTimeout: 504,
    CallFailed: 500,  # the hub's own failure
}


def http_status(failure: CallFailed) -> int:
    return HTTP_STATUS[type(failure)]


async def acall_agent_tool(
    agent_id: str, tool: str, arguments: dict[str, Any], *, actor: str, interface: str
) -> dict[str, Any]:
    """The device's MCP result (`content`, `structuredContent`, `isError`); raises a `CallFailed`."""
    presence = await aagent_presence(agent_id)
    if presence["state"] != "online":
        raise absent(agent_id, presence["state"], presence["last_seen"])
    await gateway.start()
    caller = Caller(actor=actor, interface=interface, audited=True)
    result = await gateway.call(agent_id, tool, arguments, caller)
    return result.as_mcp()


def call_agent_tool(
    agent_id: str, tool: str, arguments: dict[str, Any], *, actor: str, interface: str
) -> dict[str, Any]:
    """From sync code (the REST and dashboard views, in Django's threads). Under a server the
    call runs on the loop that serves the devices, and this thread waits for it only while
    that loop runs: a server stopping (SIGTERM) never leaves it waiting for ever, which would
    keep the process from exiting. Without a serving loop (a command, the test client), on a
    loop of its own."""
    loop = gateway.loop
    if loop is None or loop.is_closed():
        return async_to_sync(acall_agent_tool)(agent_id, tool, arguments, actor=actor, interface=interface)
    future = asyncio.run_coroutine_threadsafe(
        acall_agent_tool(agent_id, tool, arguments, actor=actor, interface=interface), loop
    )
    while True:
        try:
            return future.result(timeout=STOP_CHECK_SECONDS)
        except concurrent.futures.TimeoutError:
            if not loop.is_running():
                future.cancel()
                raise HubStopping.now() from None


__all__ = ["HTTP_STATUS", "acall_agent_tool", "call_agent_tool", "http_status"]
