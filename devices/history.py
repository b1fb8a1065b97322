"""Reads for people and integrators (dashboard, REST API): sensors' latest values and
history, the home's rows as dictionaries, agents in detail, and the audit trail.

Nothing here writes; changes go through `devices.services`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Q, QuerySet
from django.utils import timezone

from devices.models import Agent, AgentTool, Alarm, Event, Light, Person, Sensor, TelemetryReading

RANGES = {"hour": timedelta(hours=1), "day": timedelta(days=1), "week": timedelta(weeks=1)}
SENSOR_FIELDS = ("zone", "device_type", "device_id", "channel")


@dataclass(frozen=True, slots=True)
class SensorKey:
    zone: str
    device_type: str
    device_id: str
    channel: str

    @property
    def path(self) -> str:
        return f"{self.zone}/{self.device_type}/{self.device_id}/{self.channel}"

    def filter(self) -> Q:
        return Q(zone=self.zone, device_type=self.device_type, device_id=self.device_id, channel=self.channel)


# --- the home ------------------------------------------------------------------------------


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


# --- agents ----------------------------------------------------------------------------------


def agents(agent_ids: list[str] | None = None) -> list[dict[str, Any]]:
    """Every agent (or those of `agent_ids`), approved or pending, with its tools and their schemas."""
    rows = Agent.objects.all() if agent_ids is None else Agent.objects.filter(agent_id__in=agent_ids)
    found = {
        row["agent_id"]: {**row, "tools": []}
        for row in rows.values(
            "agent_id", "name", "transport", "approved", "online", "last_seen", "server_info"
        )
    }
    for row in (
        AgentTool.objects.filter(agent__agent_id__in=list(found))
        .order_by("agent__agent_id", "name")
        .values("agent__agent_id", "name", "description", "input_schema", "available")
    ):
        agent_id = row.pop("agent__agent_id")
        found[agent_id]["tools"].append(row)
    return list(found.values())


def agent(agent_id: str) -> dict[str, Any] | None:
    found = agents([agent_id])
    return found[0] if found else None


def agent_tool(agent_id: str, tool: str) -> dict[str, Any] | None:
    row = agent(agent_id)
    if row is None:
        return None
    return next((t for t in row["tools"] if t["name"] == tool), None)


# --- telemetry -------------------------------------------------------------------------------


def latest_readings() -> list[dict[str, Any]]:
    """The newest reading of every sensor, ordered by zone, device and channel (from the
    sensors table the MQTT worker keeps current: no scan of the history)."""
    rows = list(Sensor.objects.values(*SENSOR_FIELDS, "value", "unit", "measured_at"))
    for row in rows:
        row["path"] = "/".join(row[f] for f in SENSOR_FIELDS)
    return rows


def sensor_exists(key: SensorKey) -> bool:
    return Sensor.objects.filter(key.filter()).exists()


def sensor_readings(
    key: SensorKey, since: datetime | None = None, until: datetime | None = None
) -> QuerySet[TelemetryReading]:
    """A sensor's readings in [since, until], newest first."""
    readings = TelemetryReading.objects.filter(key.filter())
    if since is not None:
        readings = readings.filter(measured_at__gte=since)
    if until is not None:
        readings = readings.filter(measured_at__lte=until)
    return readings.order_by("-measured_at", "-id")


def sensor_series(key: SensorKey, range_name: str, *, max_points: int = 2000) -> dict[str, Any]:
    """The points of a chart for `range_name` (hour, day, week): oldest first, at most `max_points`
    (evenly thinned when the range holds more)."""
    now = timezone.now()
    since = now - RANGES[range_name]
    rows = list(sensor_readings(key, since, now).values_list("measured_at", "value", "unit"))
    rows.reverse()
    if len(rows) > max_points:
        step = len(rows) / max_points
        rows = [rows[int(i * step)] for i in range(max_points - 1)] + [rows[-1]]
    unit = rows[-1][2] if rows else ""
    return {"since": since, "until": now, "unit": unit, "points": [(at, value) for at, value, _ in rows]}


# --- the audit trail -------------------------------------------------------------------------


def events(*, interface: str = "", actor: str = "", target: str = "", action: str = "") -> QuerySet[Event]:
    """Audit events, newest first; `actor` and `target` match case-insensitive substrings."""
    found = Event.objects.all()
    if interface:
        found = found.filter(interface=interface)
    if actor:
        found = found.filter(actor__icontains=actor)
    if target:
        found = found.filter(target__icontains=target)
    if action:
        found = found.filter(action=action)
    return found.order_by("-at", "-id")


def event_actions(limit: int = 100) -> list[str]:
    """The actions the audit trail holds (light.set, alarm.set...), for a filter's choices."""
    return list(Event.objects.order_by("action").values_list("action", flat=True).distinct()[:limit])


def event_actors(limit: int = 50) -> list[str]:
    return list(
        Event.objects.exclude(actor="").order_by("actor").values_list("actor", flat=True).distinct()[:limit]
    )
