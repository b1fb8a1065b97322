"""The agents' REST router: ESP32 agents, their tools, and calls to them (audited as `rest`)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django.utils.translation import gettext
from ninja import Field, Router, Schema, Status
from ninja.errors import HttpError

from audit.models import Event
from common import roles
from common.rest import Error, Name, need, rest_caller
from devices.agents import selectors
from devices.agents.calls import call_agent_tool, http_status
from devices.agents.gateway import gateway
from devices.agents.outcomes import CallFailed
from devices.agents.schemas import AgentOut, ToolOut
from mcp_endpoint.engine.pipeline import ToolRefused
from mcp_endpoint.engine.tools import Caller

REST = Event.Interface.REST
router = Router(tags=["agents"])


class ToolCall(Schema):
    arguments: dict[str, Any] = Field(default_factory=dict)


class ToolCallOut(Schema):
    content: list[dict[str, Any]]
    structuredContent: dict[str, Any] | None = None
    isError: bool


@router.get("/agents", response=list[AgentOut], summary="ESP32 agents and their tools")
def list_agents(request: HttpRequest):
    need(request, "read")
    return [_enabled_tools_only(agent) for agent in selectors.agents()]


def _enabled_tools_only(agent: AgentOut) -> AgentOut:
    """The agent with the tools the owner left enabled (the tool catalogue)."""
    row = agent.copy()
    row["tools"] = gateway.enabled_only(agent["agent_id"], agent["tools"])
    return row


def _agent_or_404(agent_id: str) -> AgentOut:
    row = selectors.agent(agent_id)
    if row is None:
        raise HttpError(404, gettext("Unknown agent '%(id)s'.") % {"id": agent_id})
    return row


@router.get("/agents/{agent_id}", response={200: AgentOut, 404: Error}, summary="One agent")
def get_agent(request: HttpRequest, agent_id: Name):
    need(request, "read")
    return _enabled_tools_only(_agent_or_404(agent_id))


@router.get(
    "/agents/{agent_id}/tools",
    response={200: list[ToolOut], 404: Error},
    summary="An agent's tools",
)
def list_agent_tools(request: HttpRequest, agent_id: Name):
    need(request, "read")
    return _enabled_tools_only(_agent_or_404(agent_id))["tools"]


@router.post(
    "/agents/{agent_id}/tools/{tool}/call",
    response={
        200: ToolCallOut,
        403: Error,
        404: Error,
        409: Error,
        429: Error,
        500: Error,
        502: Error,
        503: Error,
        504: Error,
    },
    summary="Call a tool on an online agent",
)
def call_tool(request: HttpRequest, agent_id: Name, tool: Name, call: ToolCall):
    actor = need(request, "devices", roles.CALL_DEVICE_TOOLS)
    if selectors.agent_tool(agent_id, tool) is None:
        _agent_or_404(agent_id)
        return Status(
            404,
            {"detail": gettext("Agent '%(id)s' has no tool '%(tool)s'.") % {"id": agent_id, "tool": tool}},
        )
    who = rest_caller(request)
    caller = Caller(actor=actor, interface=REST, scopes=who.scopes, audited=True, confirms=who.by_token)
    try:
        return call_agent_tool(agent_id, tool, call.arguments, caller=caller)
    except (CallFailed, ToolRefused) as failure:
        return Status(http_status(failure), {"detail": failure.message})
