"""Calling an ESP32 agent's tool from the dashboard or the REST API, through the gateway.

The gateway (`devices.agents.gateway`) routes the call to whichever hub process holds the
device's socket and audits it; this module only adapts its outcome for people and HTTP.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from typing import Any

from asgiref.sync import async_to_sync

from devices.agents.gateway import gateway
from devices.agents.selectors import aagent_presence
from mcp_endpoint.registry import Caller, ToolError

STOP_CHECK_SECONDS = 0.25  # how often a waiting thread checks that the serving loop still runs


class AgentCallError(Exception):
    """A call that could not be made; `status` is the HTTP status that fits it."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


async def acall_agent_tool(
    agent_id: str, tool: str, arguments: dict[str, Any], *, actor: str, interface: str
) -> dict[str, Any]:
    """The device's MCP result (`content`, `structuredContent`, `isError`)."""
    presence = await aagent_presence(agent_id)
    if presence == "unknown":
        raise AgentCallError(f"Unknown agent '{agent_id}'.", 404)
    if presence != "online":
        raise AgentCallError(f"Agent '{agent_id}' is {presence}: it cannot take calls now.", 409)
    await gateway.start()
    caller = Caller(actor=actor, interface=interface, audited=True)
    try:
        result = await gateway.call(agent_id, tool, arguments, caller)
    except ToolError as exc:
        text = str(exc)
        status = 404 if "has no tool" in text else 409 if "offline" in text else 502
        raise AgentCallError(text, status) from None
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
                raise AgentCallError("The hub is stopping: try again in a moment.", 503) from None


__all__ = ["AgentCallError", "acall_agent_tool", "call_agent_tool"]
