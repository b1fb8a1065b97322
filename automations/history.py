"""The home's recorded history as the automations' evaluation reads it: the view of the home at
a past moment and the changes since, from the audit trail (lights, people, the alarm, agents
coming and going) and the telemetry (sensor readings). The dry run replays them; the view at
the window's start is the home now, rewound: each thing's state is the `before` of its first
change after the start (an agent's, the opposite of it), else what it is now.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from audit.models import Event
from automations.evaluation import Change, ChangeKind, HomeView, sensor_key
from devices.agents.models import Agent
from devices.home.models import Alarm, Light, Person
from devices.telemetry.models import TelemetryReading

# Audit actions that change what the evaluation sees: action -> (kind, the field it sets).
SWITCHES: dict[str, tuple[ChangeKind, str]] = {
    "light.set": ("light", "on"),
    "person.set": ("presence", "present"),
    "alarm.set": ("alarm", "armed"),
}
AGENT_ACTIONS = {"agent.connect": True, "agent.disconnect": False}
AUTOMATION_ACTOR = "automation:"  # an automation's run acts as `automation:<name>`


def current_view() -> HomeView:
    """The home as it is now, but for its sensors (`changes_between` reads their values)."""
    return HomeView(
        lights=dict(Light.objects.values_list("name", "on")),
        people=dict(Person.objects.values_list("name", "present")),
        armed=Alarm.objects.filter(pk=Alarm.SINGLETON_PK, armed=True).exists(),
        agents=dict(Agent.objects.filter(approved=True).values_list("agent_id", "online")),
    )


def changes_between(
    start: datetime, end: datetime, *, sensors: Iterable[tuple[str, str]] | None = None
) -> tuple[HomeView, list[Change]]:
    """The view of the home at `start` and every change in (start, end], in time order.
    `sensors`: the (zone, channel) pairs whose readings are wanted (None: every one)."""
    view = current_view()
    changes: list[Change] = []
    seen: set[tuple[str, str]] = set()
    events = (
        Event.objects.filter(at__gt=start, action__in=[*SWITCHES, *AGENT_ACTIONS])
        .order_by("at", "id")
        .values_list("at", "actor", "interface", "action", "target", "before", "after")
    )
    for at, actor, interface, action, target, before, after in events.iterator():
        name = target.partition(":")[2]
        if action in AGENT_ACTIONS:
            kind: ChangeKind = "agent"
            value: bool | None = AGENT_ACTIONS[action]
            was: bool | None = not value
        else:
            kind, field = SWITCHES[action]
            value = _flag(after, field)
            was = _flag(before, field)
        if value is None:
            continue
        if (kind, name) not in seen:  # its first change after the start says what it was then
            seen.add((kind, name))
            if was is not None:
                view.apply(Change(kind, name, was, start))
        if at <= end:
            by = actor.removeprefix(AUTOMATION_ACTOR) if interface == Event.Interface.AUTOMATION else ""
            changes.append(Change(kind, name, value, at, by))
    readings = _readings(start, end, view, sensors)
    return view, sorted([*changes, *readings], key=lambda c: c.at)


def _flag(values: object, field: str) -> bool | None:
    if isinstance(values, dict) and isinstance(values.get(field), bool):
        return bool(values[field])
    return None


def _readings(
    start: datetime, end: datetime, view: HomeView, sensors: Iterable[tuple[str, str]] | None
) -> list[Change]:
    """The sensors' values at `start` (into `view`) and their readings in (start, end]."""
    readings = TelemetryReading.objects.all()
    pairs = None if sensors is None else set(sensors)
    if pairs is not None:
        if not pairs:
            return []
        zones = {zone for zone, _ in pairs}
        readings = readings.filter(zone__in=zones, channel__in={channel for _, channel in pairs})
    else:
        pairs = set(readings.values_list("zone", "channel").distinct())
    for zone, channel in pairs:
        last = (
            readings.filter(zone=zone, channel=channel, measured_at__lte=start)
            .order_by("-measured_at")
            .values_list("value", flat=True)
            .first()
        )
        if last is not None:
            view.sensors[sensor_key(zone, channel)] = last
    return [
        Change("sensor", sensor_key(zone, channel), value, at)
        for zone, channel, value, at in readings.filter(measured_at__gt=start, measured_at__lte=end)
        .order_by("measured_at", "id")
        .values_list("zone", "channel", "value", "measured_at")
        .iterator()
        if (zone, channel) in pairs
    ]
