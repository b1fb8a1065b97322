"""The only writers of rooms and scenes: one transaction per change, with its audit event.

A scene's activation changes nothing itself: each light change and each tool call goes through
the one tool-call pipeline (`mcp_endpoint.engine.pipeline`) as the activating caller, so its
scopes, rate limit, a person's confirmation of dangerous calls and the audit all apply.
"""

from __future__ import annotations

from functools import partial
from typing import Any, TypeVar

from asgiref.sync import sync_to_async
from django.db import transaction

from audit.services import record_event
from automations.errors import SceneError, SceneNotFound
from automations.models import Room, RoomAgent, RoomLight, Scene, ZoneRoom
from automations.schemas import SceneActivation, SceneStep
from devices.agents.models import Agent
from devices.home.models import Light
from mcp_endpoint.engine.from_sync import run_from_sync
from mcp_endpoint.engine.pipeline import ToolRefused, call_tool
from mcp_endpoint.engine.registry import registry
from mcp_endpoint.engine.tools import Caller, ToolContext

Placed = TypeVar("Placed", ZoneRoom, RoomAgent)  # the rows that put something in a room

NAME_MAX = 100
TOOL_CALLS_MAX = 20
LIGHT_TOOL = "set_light_state"


def save_scene(
    name: str,
    lights: dict[str, bool],
    tool_calls: list[dict[str, Any]] | None = None,
    *,
    actor: str,
    interface: str,
) -> Scene:
    """Create or replace the scene `name`. Refused (SceneError, nothing saved) when the name is
    empty or too long, a light does not exist, or a tool call is malformed or names no tool."""
    name = name.strip() if isinstance(name, str) else ""
    if not name or len(name) > NAME_MAX:
        raise SceneError(f"A scene's name must be 1 to {NAME_MAX} characters.")
    if not isinstance(lights, dict) or not all(
        isinstance(k, str) and isinstance(v, bool) for k, v in lights.items()
    ):
        raise SceneError("'lights' must map light names to true (on) or false (off).")
    calls = checked_tool_calls(tool_calls or [])
    with transaction.atomic():
        known = set(Light.objects.filter(name__in=list(lights)).values_list("name", flat=True))
        missing = sorted(set(lights) - known)
        if missing:
            raise SceneError(f"Unknown light(s): {', '.join(repr(m) for m in missing)}.")
        row = Scene.objects.select_for_update().filter(name=name).first()
        before = None if row is None else {"lights": row.lights, "tool_calls": row.tool_calls}
        if row is None:
            row = Scene(name=name)
        row.lights, row.tool_calls = dict(lights), calls
        row.save()
        record_event(
            actor=actor,
            interface=interface,
            action="scene.save",
            target=f"scene:{name}",
            before=before,
            after={"lights": row.lights, "tool_calls": row.tool_calls},
        )
    return row


def checked_tool_calls(calls: Any) -> list[dict[str, Any]]:
    """A scene's tool calls as stored; SceneError names the first that is malformed or names
    no tool."""
    if not isinstance(calls, list) or len(calls) > TOOL_CALLS_MAX:
        raise SceneError(f"'tool_calls' must be a list of at most {TOOL_CALLS_MAX} calls.")
    checked = []
    for index, call in enumerate(calls):
        if (
            not isinstance(call, dict)
            or set(call) - {"tool", "arguments"}
            or not isinstance(call.get("tool"), str)
        ):
            raise SceneError(f"tool_calls[{index}] must be {{'tool': name, 'arguments': {{...}}}}.")
        arguments = call.get("arguments", {})
        if not isinstance(arguments, dict):
            raise SceneError(f"tool_calls[{index}].arguments must be an object.")
        if registry.get_declared(call["tool"]) is None:
            raise SceneError(f"tool_calls[{index}]: unknown tool '{call['tool']}'.")
        checked.append({"tool": call["tool"], "arguments": arguments})
    return checked


def delete_scene(name: str, *, actor: str, interface: str) -> None:
    with transaction.atomic():
        row = Scene.objects.select_for_update().filter(name=name).first()
        if row is None:
            raise SceneNotFound(name)
        row.delete()
        record_event(
            actor=actor,
            interface=interface,
            action="scene.delete",
            target=f"scene:{name}",
            before={"lights": row.lights, "tool_calls": row.tool_calls},
        )


async def activate_scene(name: str, ctx: ToolContext) -> SceneActivation:
    """Run scene `name`'s light changes, then its tool calls, in order, each through the
    pipeline as `ctx.caller`; a step that fails or is refused is reported and the next ones
    still run. Raises SceneNotFound."""
    row = await Scene.objects.filter(name=name).afirst()
    if row is None:
        raise SceneNotFound(name)
    planned = [(LIGHT_TOOL, {"name": light, "on": on}) for light, on in row.lights.items()]
    planned += [(call["tool"], call.get("arguments", {})) for call in row.tool_calls]
    steps: list[SceneStep] = []
    for tool, arguments in planned:
        error: str | None
        try:
            result = await call_tool(tool, arguments, ctx)
            error = (result.text or "failed") if result.is_error else None
        except ToolRefused as refused:
            error = refused.message
        steps.append({"tool": tool, "arguments": arguments, "ok": error is None, "error": error})
    outcome: SceneActivation = {"scene": name, "ok": all(s["ok"] for s in steps), "steps": steps}
    caller = ctx.caller
    await sync_to_async(record_event)(
        actor=caller.actor,
        interface=caller.interface,
        action="scene.activate",
        target=f"scene:{name}",
        after={"ok": outcome["ok"], "steps": steps},
    )
    return outcome


def activate_scene_sync(name: str, caller: Caller) -> SceneActivation:
    """`activate_scene` from a view (REST, the dashboard)."""
    return run_from_sync(partial(activate_scene, name, ToolContext(caller=caller)))


def seed_rooms(lights: list[tuple[str, str]], *, actor: str, interface: str) -> int:
    """Put each (light, room) pair's light in its room (rooms made in the order first named)
    unless the light is in a room already (the owner's moves are kept); one audit event for
    the lot. Returns how many lights were placed."""
    with transaction.atomic():
        placed = set(RoomLight.objects.values_list("light__name", flat=True))
        names = {light: room for light, room in lights if room and light not in placed}
        found = {light.name: light for light in Light.objects.filter(name__in=list(names))}
        made: list[str] = []
        for ordering, room_name in enumerate(dict.fromkeys(room for _, room in lights if room)):
            room, created = Room.objects.get_or_create(name=room_name, defaults={"ordering": ordering})
            if created:
                made.append(room_name)
            for light, wanted in names.items():
                if wanted == room_name and light in found:
                    RoomLight.objects.create(room=room, light=found[light])
        moved = sorted(set(names) & set(found))
        if made or moved:
            record_event(
                actor=actor,
                interface=interface,
                action="room.seed",
                target="rooms",
                after={"rooms": made, "lights": moved},
            )
    return len(moved)


def map_zone(zone: str, room_name: str, *, actor: str, interface: str) -> ZoneRoom:
    """Map sensor zone `zone` to the room `room_name` (made if missing)."""
    return _place(ZoneRoom, {"zone": zone}, zone, room_name, "room.zone", actor=actor, interface=interface)


def place_agent(agent_id: str, room_name: str, *, actor: str, interface: str) -> None:
    """Put agent `agent_id` in the room `room_name` (made if missing), out of any other."""
    with transaction.atomic():
        agent = Agent.objects.get(agent_id=agent_id)
        _place(
            RoomAgent, {"agent": agent}, agent_id, room_name, "room.agent", actor=actor, interface=interface
        )


def _place(
    model: type[Placed],
    key: dict[str, Any],
    named: str,
    room_name: str,
    action: str,
    *,
    actor: str,
    interface: str,
) -> Placed:
    """The row of `model` found by `key` (made if missing) in the room `room_name` (made if
    missing); a move is audited as `action`, naming what moved (`named`)."""
    with transaction.atomic():
        room, _ = Room.objects.get_or_create(name=room_name)
        row, created = model.objects.get_or_create(**key, defaults={"room": room})
        if created or row.room_id != room.pk:
            row.room = room
            row.save()
            what = next(iter(key))
            record_event(
                actor=actor,
                interface=interface,
                action=action,
                target=f"room:{room_name}",
                after={what: named},
            )
    return row
