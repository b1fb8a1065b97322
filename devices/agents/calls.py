"""Calling an ESP32 agent's tool from the dashboard or the REST API: through the one
tool-call pipeline (`mcp_endpoint.engine.pipeline`, the `call_agent_tool` tool), as an MCP client
calls it; the gateway (`devices.agents.gateway`) routes the call to whichever hub process
holds the device's connection and audits it. This module adapts that for sync views, and
gives each failure type its HTTP status (`http_status`), which both doors answer.
"""

from __future__ import annotations

from functools import partial
from typing import Any

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
)
from mcp_endpoint.engine import pipeline
from mcp_endpoint.engine.from_sync import run_from_sync
from mcp_endpoint.engine.tools import Caller, ToolContext

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


# The pipeline's refusals: the call did not run.
REFUSAL_STATUS: dict[type[pipeline.ToolRefused], int] = {
    pipeline.ToolNotFound: 404,
    pipeline.InsufficientScope: 403,
    pipeline.RateLimited: 429,
    pipeline.NotConfirmed: 403,  # a person did not approve it (as PATCH /api/alarm answers)
}


def http_status(failure: CallFailed | pipeline.ToolRefused) -> int:
    if isinstance(failure, pipeline.ToolRefused):
        return REFUSAL_STATUS.get(type(failure), 403)
    return HTTP_STATUS[type(failure)]


async def acall_agent_tool(
    agent_id: str, tool: str, arguments: dict[str, Any], caller: Caller
) -> dict[str, Any]:
    """The device's MCP result (`content`, `structuredContent`, `isError`), through the one
    tool-call pipeline (the `call_agent_tool` tool: scope, rate limit, metrics, audit).
    Raises the device call's typed failure (a `CallFailed`), or the pipeline's refusal (a
    `CallRefused`: `NotConfirmed` when the call needed a person's approval and did not get it)."""
    await gateway.start()
    arguments = {"agent_id": agent_id, "tool": tool, "arguments": arguments}
    result = await pipeline.call_tool("call_agent_tool", arguments, ToolContext(caller=caller))
    if isinstance(result.reason, CallFailed | pipeline.ToolRefused):  # a person did not confirm it
        raise result.reason
    return result.as_mcp()


def call_agent_tool(agent_id: str, tool: str, arguments: dict[str, Any], *, caller: Caller) -> dict[str, Any]:
    """From sync code (the REST and dashboard views, in Django's threads). Under a server the
    call runs on the loop that serves the devices, and this thread waits for it only while
    that loop runs: a server stopping (SIGTERM) never leaves it waiting for ever, which would
    keep the process from exiting (`HubStopping`). Without a serving loop (a command, the test
    client), on a loop of its own (`mcp_endpoint.engine.from_sync`)."""
    call = partial(acall_agent_tool, agent_id, tool, arguments, caller)
    return run_from_sync(call, loop=gateway.loop, stopping=HubStopping.now)


__all__ = ["HTTP_STATUS", "acall_agent_tool", "call_agent_tool", "http_status"]
