"""Reads of ESP32 agents: the tools the gateway offers, presence, and agents in detail for the
dashboard and the REST API."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, TypedDict

from asgiref.sync import sync_to_async
from django.db.models import Count
from django.utils.translation import gettext

from devices.agents import names
from devices.agents.models import Agent, AgentTool
from devices.agents.schemas import AgentInfo, AgentOut, ToolOut


class DeviceTool(TypedDict):
    """A device's tool as the gateway offers it (MCP's shape)."""

    name: str
    description: str
    inputSchema: dict[str, Any]
    annotations: dict[str, bool]


class OnlineAgent(TypedDict):
    name: str
    call_timeout: float
    tools: list[DeviceTool]
    clashes_with: str  # an older agent whose tools' names this one's would take ("" when none)


def agent_device_tools(agent_ids: list[str] | None = None) -> dict[str, OnlineAgent]:
    """Approved online agents (all, or those of `agent_ids`) with their available tools:
    `{agent_id: {"name", "call_timeout", "tools": [{"name", "description", "inputSchema",
    "annotations"}], "clashes_with"}}`."""
    agents = Agent.objects.filter(online=True, approved=True)
    if agent_ids is not None:
        agents = agents.filter(agent_id__in=agent_ids)
    rows = list(agents.values_list("agent_id", "name", "call_timeout"))
    clashes = names.younger_clashes(Agent.objects.values_list("pk", "agent_id")) if rows else {}
    found: dict[str, OnlineAgent] = {
        agent_id: {
            "name": name,
            "call_timeout": timeout,
            "tools": [],
            "clashes_with": clashes.get(agent_id, ""),
        }
        for agent_id, name, timeout in rows
    }
    tools = AgentTool.objects.filter(agent__agent_id__in=list(found), available=True).order_by(
        "agent_id", "name"
    )
    for agent_id, name, description, schema, hints in tools.values_list(
        "agent__agent_id", "name", "description", "input_schema", "annotations"
    ):
        found[agent_id]["tools"].append(
            {"name": name, "description": description, "inputSchema": schema, "annotations": hints}
        )
    return found


def list_agents() -> list[AgentInfo]:
    """Every approved agent, online or not, with the tools it is known to have, as the
    `list_agents` tool gives them out (without the names the gateway offers their tools under,
    which only the tool knows)."""
    agents: dict[str, AgentInfo] = {}
    for row in Agent.objects.filter(approved=True).values(
        "agent_id", "name", "transport", "online", "connects_on_demand", "last_seen", "server_info"
    ):
        last_seen = row["last_seen"]
        agents[row["agent_id"]] = {
            **row,
            "last_seen": last_seen.isoformat() if last_seen else None,
            "tools": [],
        }
    for agent_id, name, description, available in AgentTool.objects.filter(agent__approved=True).values_list(
        "agent__agent_id", "name", "description", "available"
    ):
        agents[agent_id]["tools"].append({"name": name, "description": description, "available": available})
    return list(agents.values())


def online_agents_by_transport() -> dict[str, int]:
    """How many approved agents are online, per transport (every transport present, 0 or more)."""
    counts = dict.fromkeys(Agent.Transport.values, 0)
    rows = Agent.objects.filter(approved=True, online=True).values("transport").annotate(n=Count("id"))
    for row in rows:
        counts[row["transport"]] = row["n"]
    return counts


class AgentPresence(TypedDict):
    """Whether an agent can be called now: `online`; `offline`; `on_demand` (offline, and it
    connects only while someone talks to it); `pending` (not approved); `unknown`. `last_seen`:
    when it was last reachable."""

    state: Literal["online", "offline", "on_demand", "pending", "unknown"]
    last_seen: datetime | None


def agent_presence(agent_id: str) -> AgentPresence:
    row = (
        Agent.objects.filter(agent_id=agent_id)
        .values_list("approved", "online", "connects_on_demand", "last_seen")
        .first()
    )
    if row is None:
        return {"state": "unknown", "last_seen": None}
    approved, online, on_demand, last_seen = row
    if not approved:
        return {"state": "pending", "last_seen": last_seen}
    if online:
        return {"state": "online", "last_seen": last_seen}
    return {"state": "on_demand" if on_demand else "offline", "last_seen": last_seen}


def clashing_agent(agent_id: str) -> str | None:
    """The existing agent whose tools would be offered under the same names as this new id's
    (`col:dev` and `col_dev`: `devices.agents.names`), or None."""
    others = Agent.objects.exclude(agent_id=agent_id).values_list("agent_id", flat=True)
    return next((other for other in others.iterator() if names.clash(agent_id, other)), None)


def agent_session(agent_id: str) -> str:
    """The session of the agent's live connection, as last recorded ('' when none)."""
    return Agent.objects.filter(agent_id=agent_id).values_list("session_id", flat=True).first() or ""


aagent_device_tools = sync_to_async(agent_device_tools)


aagent_presence = sync_to_async(agent_presence)


aagent_session = sync_to_async(agent_session)


def agents(agent_ids: list[str] | None = None) -> list[AgentOut]:
    """Every agent (or those of `agent_ids`), approved or pending, with its tools and their schemas."""
    rows = Agent.objects.all() if agent_ids is None else Agent.objects.filter(agent_id__in=agent_ids)
    found: dict[str, AgentOut] = {
        row["agent_id"]: {**row, "tools": []}
        for row in rows.values(
            "agent_id",
            "name",
            "transport",
            "approved",
            "online",
            "connects_on_demand",
            "last_seen",
            "server_info",
        )
    }
    for agent_id, name, description, schema, available in (
        AgentTool.objects.filter(agent__agent_id__in=list(found))
        .order_by("agent__agent_id", "name")
        .values_list("agent__agent_id", "name", "description", "input_schema", "available")
    ):
        found[agent_id]["tools"].append(
            {"name": name, "description": description, "input_schema": schema, "available": available}
        )
    return list(found.values())


def agent(agent_id: str) -> AgentOut | None:
    found = agents([agent_id])
    return found[0] if found else None


def agent_tool(agent_id: str, tool: str) -> ToolOut | None:
    row = agent(agent_id)
    if row is None:
        return None
    return next((t for t in row["tools"] if t["name"] == tool), None)


SHORT_ID_CHARS = 5


def display_name(agent_id: str, name: str, server_info: Any, room: str | None = None) -> str:
    """What the household calls a device: the owner's label, else the name the device announced,
    else "<Room> device", else a short form of its id ("Device 3f:a2" for a MAC)."""
    if name:
        return name
    announced = server_info.get("name") if isinstance(server_info, dict) else None
    if isinstance(announced, str) and announced.strip():
        return announced.strip()[:100]
    if room:
        return gettext("%(room)s device") % {"room": room}
    if len(agent_id) > 2 * SHORT_ID_CHARS:
        return gettext("Device %(id)s") % {"id": agent_id[-SHORT_ID_CHARS:]}
    return agent_id
