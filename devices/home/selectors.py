"""Reads of the home: seed 000's tool shapes (`get_*`, `list_lights_on`), and rows as
dictionaries for the dashboard and the REST API. MCP tools read on the event loop through
`devices.home.state`, which keeps a copy of what `get_all_states` returns."""

from __future__ import annotations

from devices.home.models import Alarm, Light, Person
from devices.home.schemas import (
    AlarmOut,
    AlarmStatusOut,
    AllStatesOut,
    LightOut,
    LightsOnOut,
    PersonOut,
    PresenceOut,
)


def get_presence() -> PresenceOut:
    names = list(Person.objects.filter(present=True).values_list("name", flat=True))
    return {"present": bool(names), "known_people": names}


def get_alarm_status() -> AlarmStatusOut:
    armed = Alarm.objects.filter(pk=Alarm.SINGLETON_PK).values_list("armed", flat=True).first()
    return {"armed": bool(armed)}


def list_lights_on() -> LightsOnOut:
    return {"on": list(Light.objects.filter(on=True).values_list("name", flat=True))}


def get_all_states() -> AllStatesOut:
    return {
        "lights": dict(Light.objects.values_list("name", "on")),
        "alarm": get_alarm_status()["armed"],
        "presence": get_presence(),
    }


def lights() -> list[LightOut]:
    return list(Light.objects.values("name", "label", "room", "on", "updated_at"))


def light(name: str) -> LightOut | None:
    return Light.objects.filter(name=name).values("name", "label", "room", "on", "updated_at").first()


def alarm() -> AlarmOut:
    row = Alarm.objects.filter(pk=Alarm.SINGLETON_PK).values("armed", "updated_at").first()
    if row is None:  # not created yet: disarmed
        return {"armed": False, "updated_at": None}
    return {"armed": row["armed"], "updated_at": row["updated_at"]}


def people() -> list[PersonOut]:
    return list(Person.objects.values("name", "present", "updated_at"))


def person(name: str) -> PersonOut | None:
    return Person.objects.filter(name=name).values("name", "present", "updated_at").first()
