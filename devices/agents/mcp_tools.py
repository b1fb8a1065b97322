"""The tools that reach ESP32 agents by name (each agent's own tools are offered by the
gateway under names of their own)."""

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from common.schemas import NoArguments, output_model
from common.storable import LookupText
from devices.agents import selectors
from devices.agents.gateway import as_tool_result, gateway
from devices.agents.schemas import AgentList
from mcp_endpoint.auth.scopes import declare_scope
from mcp_endpoint.engine.registry import registry, tool
from mcp_endpoint.engine.tools import ToolContext, ToolResult

declare_scope("devices", "ESP32 agents: list them and call their tools")
registry.add_instructions(
    "ESP32 devices offer tools of their own: list_agents shows them, call_agent_tool calls one "
    "(each online device's tools also appear under names of their own)."
)


class CallAgentToolInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    agent_id: LookupText = Field(description="The agent, as list_agents names it")
    tool: LookupText = Field(description="The device's own tool name, e.g. self.audio_speaker.set_volume")
    arguments: dict[str, Any] = Field(default_factory=dict, description="As the tool's input schema asks")


@tool(scope="devices", read_only=True, output=output_model(AgentList))
def list_agents(args: NoArguments, ctx: ToolContext) -> AgentList:
    """Lists the ESP32 agents (devices), whether each is online (or connects only while spoken to),
    when each was last reachable, and the tools each one offers"""
    agents = selectors.list_agents()
    for agent in agents:
        names = gateway.names_of(agent["agent_id"])
        agent["tools"] = gateway.enabled_only(agent["agent_id"], agent["tools"])
        for tool_info in agent["tools"]:
            if tool_info["name"] in names:
                tool_info["gateway_name"] = names[tool_info["name"]]
    return {"agents": agents}


# A client that declared MCP's tasks extension gets the device's answer as a task's result.
@tool(scope="devices", open_world=True, task_support="optional")
async def call_agent_tool(args: CallAgentToolInput, ctx: ToolContext) -> ToolResult:
    """Calls one tool of an online ESP32 agent and returns the device's answer"""
    # A device tool that needs a person's confirmation is judged by the gateway once routed.
    return await as_tool_result(gateway.call(args.agent_id, args.tool, args.arguments, ctx.caller, ctx))
