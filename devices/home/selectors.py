"""Reads of the home: seed 000's tool shapes (`get_*`, `list_lights_on`), and rows as
dictionaries for the dashboard and the REST API. MCP tools read on the event loop through
`devices.home.state`, which keeps a copy of what `get_all_states` returns."""

from __future__ import annotations

from typing import Any

from devices.home.models import Alarm, Light, Person


def get_presence() -> dict[str, Any]:
    names = list(Person.objects.filter(present=True).values_list("name", flat=True))
    return {"present": bool(names), "known_people": names}


def get_alarm_status() -> dict[str, bool]:
    armed = Alarm.objects.filter(pk=Alarm.SINGLETON_PK).values_list("armed", flat=True).first()
    return {"armed": bool(armed)}


def list_lights_on() -> dict[str, list[str]]:
    return {"on": list(Light.objects.filter(on=True).values_list("name", flat=True))}


def get_all_states() -> dict[str, Any]:
    return {
        "lights": dict(Light.objects.values_list("name", "on")),
        "alarm": get_alarm_status()["armed"],
        "presence": get_presence(),
    }


def lights() -> list[dict[str, Any]]:
    return list(Light.objects.values("name", "label", "room", "on", "updated_at"))


def light(name: str) -> dict[str, Any] | None:
    return Light.objects.filter(name=name).values("name", "label", "room", "on", "updated_at").first()


def lights_by_room() -> list[tuple[str, list[dict[str, Any]]]]:
    """[(room, [light, ...]), ...] in the order rooms first appear."""
    rooms: dict[str, list[dict[str, Any]]] = {}
    for row in lights():
        rooms.setdefault(row["room"] or "Other", []).append(row)
    return list(rooms.items())


def alarm() -> dict[str, Any]:
    row = Alarm.objects.filter(pk=Alarm.SINGLETON_PK).values("armed", "updated_at").first()
    return row or {"armed": False, "updated_at": None}


def people() -> list[dict[str, Any]]:
    return list(Person.objects.values("name", "present", "updated_at"))


def person(name: str) -> dict[str, Any] | None:
    return Person.objects.filter(name=name).values("name", "present", "updated_at").first()
