"""The tools that reach ESP32 agents by name (each agent's own tools are offered by the
gateway under names of their own)."""

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from common.schemas import NoArguments
from common.storable import LookupText
from devices.agents import selectors
from devices.agents.gateway import as_tool_result, gateway
from mcp_endpoint.registry import ToolContext, ToolResult, registry, tool
from mcp_endpoint.scopes import declare_scope

declare_scope("devices", "ESP32 agents: list them and call their tools")
registry.add_instructions(
    "ESP32 devices offer tools of their own: list_agents shows them, call_agent_tool calls one "
    "(each online device's tools also appear under names of their own)."
)


class AgentToolInfo(BaseModel):
    name: str
    description: str
    available: bool
    gateway_name: str | None = Field(None, description="The name to call it by directly, while online")


class AgentInfo(BaseModel):
    agent_id: str
    name: str
    transport: str
    online: bool
    connects_on_demand: bool = Field(
        description="The device connects only while someone is talking to it (stock xiaozhi "
        "firmware): offline is its usual state, and its tools can be called only while it is online"
    )
    last_seen: str | None = Field(description="When the device was last reachable (ISO 8601)")
    server_info: dict[str, Any]
    tools: list[AgentToolInfo]


class AgentList(BaseModel):
    agents: list[AgentInfo]


class CallAgentToolInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    agent_id: LookupText = Field(description="The agent, as list_agents names it")
    tool: LookupText = Field(description="The device's own tool name, e.g. self.audio_speaker.set_volume")
    arguments: dict[str, Any] = Field(default_factory=dict, description="As the tool's input schema asks")


@tool(scope="devices", read_only=True)
def list_agents(args: NoArguments, ctx: ToolContext) -> AgentList:
    """Lists the ESP32 agents (devices), whether each is online (or connects only while spoken to),
    when each was last reachable, and the tools each one offers"""
    agents = []
    for agent in selectors.list_agents():
        names = gateway.names_of(agent["agent_id"])
        last_seen = agent["last_seen"]
        agents.append(
            AgentInfo(
                agent_id=agent["agent_id"],
                name=agent["name"],
                transport=agent["transport"],
                online=agent["online"],
                connects_on_demand=agent["connects_on_demand"],
                last_seen=last_seen.isoformat() if last_seen else None,
                server_info=agent["server_info"],
                tools=[
                    AgentToolInfo(**t, gateway_name=names.get(t["name"]))
                    for t in gateway.enabled_only(agent["agent_id"], agent["tools"])
                ],
            )
        )
    return AgentList(agents=agents)


@tool(scope="devices", open_world=True)
async def call_agent_tool(args: CallAgentToolInput, ctx: ToolContext) -> ToolResult:
    """Calls one tool of an online ESP32 agent and returns the device's answer"""
    # A device tool that needs a person's confirmation is judged by the gateway once routed.
    return await as_tool_result(gateway.call(args.agent_id, args.tool, args.arguments, ctx.caller, ctx))
