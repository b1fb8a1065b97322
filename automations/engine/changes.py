"""The change feed's events (`audit.changes`, group `home`) as the `Change`s the evaluation
judges.

An event says what changed (a light, the alarm, a person, an agent, sensor values); some only
say that something did: telemetry too large to carry its values, the home seeded again. For
those `changes_from_event` answers None, and the engine reads the home afresh and takes the
difference (`differences`), so both kinds end as the same `Change`s.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.utils.dateparse import parse_datetime

from automations.evaluation import Change, HomeView, sensor_key

AUTOMATION_ACTOR = "automation:"  # an automation's run acts as `automation:<name>`
AUTOMATION_INTERFACE = "automation"


def actor_of(name: str) -> str:
    return f"{AUTOMATION_ACTOR}{name}"


def made_by(event: dict[str, Any]) -> str:
    """The automation whose run made the change of `event`, "" for anyone else."""
    actor = str(event.get("actor") or "")
    if event.get("interface") == AUTOMATION_INTERFACE and actor.startswith(AUTOMATION_ACTOR):
        return actor.removeprefix(AUTOMATION_ACTOR)
    return ""


def _when(event: dict[str, Any], now: datetime) -> datetime:
    parsed = parse_datetime(str(event.get("at") or ""))
    return parsed if parsed is not None else now


def sensor_name(path: str) -> str | None:
    """`zone/channel` of a telemetry path `zone/device_type/device_id/channel`."""
    parts = path.split("/")
    return sensor_key(parts[0], parts[-1]) if len(parts) >= 2 else None


def changes_from_event(event: dict[str, Any], now: datetime) -> list[Change] | None:
    """The changes an event of the feed carries ([] for none the evaluation judges), at the
    moment it says (else `now`: live sensor values carry none); None when it says the home
    changed without saying how (read it afresh)."""
    kind, by, at = event.get("kind"), made_by(event), _when(event, now)
    if kind == "light" and "on" in event:
        return [Change("light", str(event.get("name", "")), bool(event["on"]), at, by)]
    if kind == "alarm" and "armed" in event:
        return [Change("alarm", "", bool(event["armed"]), at, by)]
    if kind == "person" and "present" in event:
        return [Change("presence", str(event.get("name", "")), bool(event["present"]), at, by)]
    if kind == "agent" and "online" in event:
        return [Change("agent", str(event.get("agent_id", "")), bool(event["online"]), at, by)]
    if kind == "home":
        return None
    if kind == "telemetry":
        if "sensors" not in event:
            return None
        out = []
        for sensor in event["sensors"]:
            name = sensor_name(str(sensor.get("path", "")))
            value = sensor.get("value")
            if name is not None and isinstance(value, int | float):
                out.append(Change("sensor", name, float(value), at, by))
        return out
    return []


def differences(before: HomeView, after: HomeView, at: datetime, by: str = "") -> list[Change]:
    """The changes that lead from `before` to `after`."""
    out: list[Change] = []
    kinds: list[tuple[Any, dict[str, Any], dict[str, Any]]] = [
        ("light", before.lights, after.lights),
        ("presence", before.people, after.people),
        ("sensor", before.sensors, after.sensors),
        ("agent", before.agents, after.agents),
    ]
    for kind, old, new in kinds:
        out += [Change(kind, name, value, at, by) for name, value in new.items() if old.get(name) != value]
    if before.armed != after.armed:
        out.append(Change("alarm", "", after.armed, at, by))
    return out
