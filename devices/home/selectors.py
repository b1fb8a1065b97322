"""Reads of the home: seed 000's tool shapes (`get_*`, `list_lights_on`), and rows as
dictionaries for the dashboard and the REST API. MCP tools read on the event loop through
`devices.home.state`, which keeps a copy of what `get_all_states` returns."""

from __future__ import annotations

from datetime import datetime
from typing import TypedDict

from devices.home.models import Alarm, Light, Person


class Presence(TypedDict):
    present: bool
    known_people: list[str]


class AlarmStatus(TypedDict):
    armed: bool


class LightsOn(TypedDict):
    on: list[str]


class AllStates(TypedDict):
    lights: dict[str, bool]
    alarm: bool
    presence: Presence


class LightRow(TypedDict):
    name: str
    label: str
    room: str
    on: bool
    updated_at: datetime


class AlarmRow(TypedDict):
    armed: bool
    updated_at: datetime | None


class PersonRow(TypedDict):
    name: str
    present: bool
    updated_at: datetime


def get_presence() -> Presence:
    names = list(Person.objects.filter(present=True).values_list("name", flat=True))
    return {"present": bool(names), "known_people": names}


def get_alarm_status() -> AlarmStatus:
    armed = Alarm.objects.filter(pk=Alarm.SINGLETON_PK).values_list("armed", flat=True).first()
    return {"armed": bool(armed)}


def list_lights_on() -> LightsOn:
    return {"on": list(Light.objects.filter(on=True).values_list("name", flat=True))}


def get_all_states() -> AllStates:
    return {
        "lights": dict(Light.objects.values_list("name", "on")),
        "alarm": get_alarm_status()["armed"],
        "presence": get_presence(),
    }


def lights() -> list[LightRow]:
    return list(Light.objects.values("name", "label", "room", "on", "updated_at"))


def light(name: str) -> LightRow | None:
    return Light.objects.filter(name=name).values("name", "label", "room", "on", "updated_at").first()


def lights_by_room() -> list[tuple[str, list[LightRow]]]:
    """[(room, [light, ...]), ...] in the order rooms first appear."""
    rooms: dict[str, list[LightRow]] = {}
    for row in lights():
        rooms.setdefault(row["room"] or "Other", []).append(row)
    return list(rooms.items())


def alarm() -> AlarmRow:
    row = Alarm.objects.filter(pk=Alarm.SINGLETON_PK).values("armed", "updated_at").first()
    if row is None:  # not created yet: disarmed
        return {"armed": False, "updated_at": None}
    return {"armed": row["armed"], "updated_at": row["updated_at"]}


def people() -> list[PersonRow]:
    return list(Person.objects.values("name", "present", "updated_at"))


def person(name: str) -> PersonRow | None:
    return Person.objects.filter(name=name).values("name", "present", "updated_at").first()
