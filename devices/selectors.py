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
from django.db.models import Model, QuerySet

from devices.models import Alarm, Light, Person

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


aget_presence = sync_to_async(get_presence)
aget_alarm_status = sync_to_async(get_alarm_status)
alist_lights_on = sync_to_async(list_lights_on)
aget_all_states = sync_to_async(get_all_states)
