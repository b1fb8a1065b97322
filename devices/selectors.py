"""Reads of the home, shaped as seed 000's tools return them.

These run on every MCP read, so each query's SQL is built by the ORM once per database
(`_rows`) and then executed directly: building and compiling a queryset costs several
times what SQLite takes to answer it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from asgiref.sync import sync_to_async
from django.db import connections, router
from django.db.models import Count, Model, QuerySet

from devices import home_state
from devices.models import Agent, AgentTool, Alarm, Light, Person

_compiled: dict[tuple[Callable[[], QuerySet], str], tuple[str, tuple[Any, ...]]] = {}


def _rows(model: type[Model], build: Callable[[], QuerySet]) -> list[tuple[Any, ...]]:
    """The rows of `build()`'s query, as the database returns them (no field converters)."""
    alias = router.db_for_read(model)
    compiled = _compiled.get((build, alias))
    if compiled is None:
        compiled = _compiled[(build, alias)] = build().query.get_compiler(using=alias).as_sql()
    sql, params = compiled
    with connections[alias].cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def _present_people() -> QuerySet:
    return Person.objects.filter(present=True).values_list("name")


def _alarm_armed() -> QuerySet:
    # What `.values_list("armed", flat=True).first()` runs.
    return Alarm.objects.filter(pk=Alarm.SINGLETON_PK).order_by("pk").values_list("armed")[:1]


def _lights_on() -> QuerySet:
    return Light.objects.filter(on=True).values_list("name")


def _lights() -> QuerySet:
    return Light.objects.values_list("name", "on")


def get_presence() -> dict[str, Any]:
    names = [name for (name,) in _rows(Person, _present_people)]
    return {"present": bool(names), "known_people": names}


def get_alarm_status() -> dict[str, bool]:
    rows = _rows(Alarm, _alarm_armed)
    return {"armed": bool(rows[0][0]) if rows else False}


def list_lights_on() -> dict[str, list[str]]:
    return {"on": [name for (name,) in _rows(Light, _lights_on)]}


def get_all_states() -> dict[str, Any]:
    return {
        "lights": {name: bool(on) for name, on in _rows(Light, _lights)},
        "alarm": get_alarm_status()["armed"],
        "presence": get_presence(),
    }


# The async reads answer from the state kept by `devices.home_state` while the database
# proves it current, without a hop to the database thread.
aget_presence = home_state.presence
aget_alarm_status = home_state.alarm_status
alist_lights_on = home_state.lights_on
aget_all_states = home_state.all_states


# --- ESP32 agents ---------------------------------------------------------------------------


def agent_device_tools(agent_ids: list[str] | None = None) -> dict[str, dict[str, Any]]:
    """Approved online agents (all, or those of `agent_ids`) with their available tools:
    `{agent_id: {"name", "call_timeout", "tools": [{"name", "description", "inputSchema"}]}}`."""
    agents = Agent.objects.filter(online=True, approved=True)
    if agent_ids is not None:
        agents = agents.filter(agent_id__in=agent_ids)
    found = {
        agent_id: {"name": name, "call_timeout": timeout, "tools": []}
        for agent_id, name, timeout in agents.values_list("agent_id", "name", "call_timeout")
    }
    tools = AgentTool.objects.filter(agent__agent_id__in=list(found), available=True).order_by(
        "agent_id", "name"
    )
    for agent_id, name, description, schema in tools.values_list(
        "agent__agent_id", "name", "description", "input_schema"
    ):
        found[agent_id]["tools"].append({"name": name, "description": description, "inputSchema": schema})
    return found


def list_agents() -> list[dict[str, Any]]:
    """Every approved agent, online or not, with the tools it is known to have."""
    agents = {
        row["agent_id"]: {**row, "tools": []}
        for row in Agent.objects.filter(approved=True).values(
            "agent_id", "name", "transport", "online", "last_seen", "server_info"
        )
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


def agent_presence(agent_id: str) -> str:
    """'online', 'offline', 'pending' (not approved) or 'unknown'."""
    row = Agent.objects.filter(agent_id=agent_id).values_list("approved", "online").first()
    if row is None:
        return "unknown"
    approved, online = row
    if not approved:
        return "pending"
    return "online" if online else "offline"


def agent_session(agent_id: str) -> str:
    """The session of the agent's live connection, as last recorded ('' when none)."""
    return Agent.objects.filter(agent_id=agent_id).values_list("session_id", flat=True).first() or ""


aagent_device_tools = sync_to_async(agent_device_tools)
aagent_presence = sync_to_async(agent_presence)
aagent_session = sync_to_async(agent_session)
