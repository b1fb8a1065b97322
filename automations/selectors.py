"""Reads: the rooms with what is in them, and the scenes."""

from __future__ import annotations

from automations.models import Room, RoomAgent, RoomLight, Scene, ZoneRoom
from automations.schemas import RoomContents, RoomDevice, RoomOut, RoomSensor, RoomsOut, SceneOut
from automations.schemas import RoomLight as LightRow
from devices.agents import selectors as agents_reads
from devices.agents.models import Agent
from devices.home.models import Light
from devices.telemetry import selectors as telemetry


def rooms() -> RoomsOut:
    """Each room (in order) with its lights and their state, its zones' latest sensor values
    and its devices; then what belongs to no room."""
    light_room = dict(RoomLight.objects.values_list("light_id", "room_id"))
    agent_room = dict(RoomAgent.objects.values_list("agent_id", "room_id"))
    zone_room = dict(ZoneRoom.objects.values_list("zone", "room_id"))
    by_room: dict[int | None, RoomContents] = {}

    def contents(room_id: int | None) -> RoomContents:
        return by_room.setdefault(room_id, {"lights": [], "sensors": [], "devices": []})

    for pk, name, label, on in Light.objects.values_list("pk", "name", "label", "on"):
        light: LightRow = {"name": name, "label": label, "on": on}
        contents(light_room.get(pk))["lights"].append(light)
    for row in telemetry.latest_readings():
        sensor: RoomSensor = {
            "path": row["path"],
            "zone": row["zone"],
            "device_type": row["device_type"],
            "device_id": row["device_id"],
            "channel": row["channel"],
            "value": row["value"],
            "unit": row["unit"],
            "measured_at": row["measured_at"].isoformat(),
        }
        contents(zone_room.get(row["zone"]))["sensors"].append(sensor)
    room_names = dict(Room.objects.values_list("pk", "name"))
    for pk, agent_id, agent_name, server_info, online in Agent.objects.filter(approved=True).values_list(
        "pk", "agent_id", "name", "server_info", "online"
    ):
        room = room_names.get(agent_room.get(pk, 0))
        name = agents_reads.display_name(agent_id, agent_name, server_info, room)
        device: RoomDevice = {"agent_id": agent_id, "name": name, "online": online}
        contents(agent_room.get(pk))["devices"].append(device)
    zones: dict[int, list[str]] = {}
    for zone, room_id in sorted(zone_room.items()):
        zones.setdefault(room_id, []).append(zone)
    listed: list[RoomOut] = [
        {"name": name, "zones": zones.get(pk, []), **contents(pk)}
        for pk, name in Room.objects.values_list("pk", "name")
    ]
    return {"rooms": listed, "elsewhere": contents(None)}


def device_names() -> dict[str, str]:
    """Each agent's name as the household reads it (`devices.agents.selectors.display_name`,
    with its room for a default)."""
    rooms = dict(RoomAgent.objects.values_list("agent__agent_id", "room__name"))
    return {
        agent_id: agents_reads.display_name(agent_id, name, server_info, rooms.get(agent_id))
        for agent_id, name, server_info in Agent.objects.values_list("agent_id", "name", "server_info")
    }


def scenes() -> list[SceneOut]:
    return [_scene(s) for s in Scene.objects.all()]


def scene(name: str) -> SceneOut | None:
    found = Scene.objects.filter(name=name).first()
    return _scene(found) if found is not None else None


def _scene(row: Scene) -> SceneOut:
    return {"name": row.name, "lights": dict(row.lights), "tool_calls": list(row.tool_calls)}
