"""Reads of the home, shaped as seed 000's tools return them."""

from __future__ import annotations

from typing import Any

from asgiref.sync import sync_to_async

from devices.models import Alarm, Light, Person


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


aget_presence = sync_to_async(get_presence)
aget_alarm_status = sync_to_async(get_alarm_status)
alist_lights_on = sync_to_async(list_lights_on)
aget_all_states = sync_to_async(get_all_states)
