"""Whether a definition can be saved: its shape (`definition.parse`), then everything it names
exists now (lights, people, sensor zones and channels, agents, scenes, tools, and what a tool
action's arguments name), each tool action's arguments fit the tool's input schema, cron
expressions parse, a sun trigger or condition has the home's location, and (with the author's
scopes) each tool action is one the author may call. Every problem is reported at once, each
naming its field, in the active language (the page's or REST request's; an MCP call's is the
hub's, LANGUAGE_CODE).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.utils.translation import gettext

from automations import schedules
from automations.definition import (
    AgentCondition,
    AgentTrigger,
    Definition,
    LightCondition,
    LightTrigger,
    PresenceCondition,
    PresenceTrigger,
    SceneAction,
    SensorCondition,
    SensorTrigger,
    SunCondition,
    SunTrigger,
    TimeTrigger,
    ToolAction,
    parse,
)
from automations.errors import DefinitionError
from automations.models import Scene, ZoneRoom
from devices.agents.gateway import SCOPE as DEVICE_SCOPE
from devices.agents.models import Agent, AgentTool
from devices.agents.names import exposed_name
from devices.home.models import Light, Person
from devices.telemetry.models import Sensor
from mcp_endpoint.engine.registry import registry

# The arguments of hub tools that name something of the home: tool -> {argument: kind}.
NAMED_IN_ARGUMENTS = {
    "set_light_state": {"name": "light"},
    "scene_activate": {"name": "scene"},
    "call_agent_tool": {"agent_id": "agent"},
}


@dataclass(frozen=True)
class KnownTool:
    """A tool an action may call: its scope and input schema."""

    name: str
    scope: str
    input_schema: dict[str, Any]


def known_tool(name: str) -> KnownTool | None:
    """The hub's tool `name` (declared, or a device's tool the gateway offers now), or a tool of
    an approved device known from its last connection (offline now), by its exposed name."""
    found = registry.get_declared(name)
    if found is not None:
        return KnownTool(found.name, found.scope, found.input_schema)
    for agent_id, tool, schema in AgentTool.objects.filter(agent__approved=True).values_list(
        "agent__agent_id", "name", "input_schema"
    ):
        if exposed_name(agent_id, tool) == name:
            return KnownTool(name, DEVICE_SCOPE, schema if isinstance(schema, dict) else {})
    return None


class _Known:
    """What exists in the home now, each kind read once."""

    def __init__(self) -> None:
        self.lights = set(Light.objects.values_list("name", flat=True))
        self.people = set(Person.objects.values_list("name", flat=True))
        self.agents = set(Agent.objects.values_list("agent_id", flat=True))
        self.scenes = set(Scene.objects.values_list("name", flat=True))
        self.channels: dict[str, set[str]] = {
            zone: set() for zone in ZoneRoom.objects.values_list("zone", flat=True)
        }
        for zone, channel in Sensor.objects.values_list("zone", "channel").distinct():
            self.channels.setdefault(zone, set()).add(channel)

    def missing(self, kind: str, name: str) -> str | None:
        """Why `name` (a light, person, agent or scene) is unknown; None when it exists."""
        names = {"light": self.lights, "person": self.people, "agent": self.agents, "scene": self.scenes}[
            kind
        ]
        if name in names:
            return None
        missing = {
            "light": gettext("no light named '%(name)s'"),
            "person": gettext("no person named '%(name)s'"),
            "agent": gettext("no agent named '%(name)s'"),
            "scene": gettext("no scene named '%(name)s'"),
        }[kind]
        return missing % {"name": name}


def validate(data: dict[str, Any], *, scopes: frozenset[str] | None = None) -> Definition:
    """The definition in `data`, checked against the home as it is now; DefinitionError listing
    every problem, each naming its field. With `scopes` (the author's), a tool action outside
    them is a problem too: an author cannot make an automation do what they may not."""
    definition = parse(data)
    known = _Known()
    errors: list[str] = []
    for i, trigger in enumerate(definition.triggers):
        errors += _reference(f"triggers[{i}]", trigger, known)
    for i, condition in enumerate(definition.conditions):
        errors += _reference(f"conditions[{i}]", condition, known)
    for i, action in enumerate(definition.actions):
        where = f"actions[{i}]"
        if isinstance(action, SceneAction):
            problem = known.missing("scene", action.scene)
            errors += [f"{where}.scene: {problem}"] if problem else []
        elif isinstance(action, ToolAction):
            errors += _tool_action(where, action, known, scopes)
    if errors:
        raise DefinitionError(errors)
    return definition


def _reference(where: str, item: Any, known: _Known) -> list[str]:
    """The problems of one trigger or condition: what it names, its schedule."""
    problems: list[tuple[str, str | None]] = []
    if isinstance(item, LightTrigger | LightCondition):
        problems.append(("name", known.missing("light", item.name)))
    elif isinstance(item, PresenceTrigger | PresenceCondition) and item.person is not None:
        problems.append(("person", known.missing("person", item.person)))
    elif isinstance(item, AgentTrigger | AgentCondition):
        problems.append(("agent", known.missing("agent", item.agent)))
    elif isinstance(item, SensorTrigger | SensorCondition):
        if item.zone not in known.channels:
            problems.append(("zone", gettext("no sensor zone named '%(zone)s'") % {"zone": item.zone}))
        elif item.channel not in known.channels[item.zone]:
            said = gettext("zone '%(zone)s' has no sensor channel '%(channel)s'")
            problems.append(("channel", said % {"zone": item.zone, "channel": item.channel}))
    elif isinstance(item, TimeTrigger):
        problems.append(("cron", _schedule_problem(lambda: schedules.check_cron(item.cron))))
    elif isinstance(item, SunTrigger | SunCondition):
        problems.append(("type", _schedule_problem(schedules.location)))
    return [f"{where}.{field}: {problem}" for field, problem in problems if problem]


def _schedule_problem(check: Callable[[], object]) -> str | None:
    try:
        check()
    except schedules.ScheduleError as exc:
        return str(exc)
    return None


def _tool_action(where: str, action: ToolAction, known: _Known, scopes: frozenset[str] | None) -> list[str]:
    found = known_tool(action.tool)
    if found is None:
        return [f"{where}.tool: " + gettext("no tool named '%(tool)s'") % {"tool": action.tool}]
    errors = []
    if scopes is not None and found.scope not in scopes:
        said = gettext("'%(tool)s' needs the '%(scope)s' scope, which you lack")
        errors.append(f"{where}.tool: " + said % {"tool": action.tool, "scope": found.scope})
    if found.input_schema:
        # jsonschema loads with the first definition checked, not with every command of the hub
        # (about 20 ms of CPU at start, mcp_stdio's included).
        import jsonschema

        problem = jsonschema.exceptions.best_match(
            jsonschema.Draft202012Validator(found.input_schema).iter_errors(action.arguments)
        )
        if problem is not None:
            path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in problem.absolute_path)
            errors.append(f"{where}.arguments{path}: {problem.message}")
    for argument, kind in NAMED_IN_ARGUMENTS.get(action.tool, {}).items():
        value = action.arguments.get(argument)
        if isinstance(value, str):
            missing = known.missing(kind, value)
            if missing:
                errors.append(f"{where}.arguments.{argument}: {missing}")
    return errors
