"""Whether an automation fires: the one judgement the live engine and the dry run share, so
that a dry run over recorded changes answers what the engine did over the same changes.

Both feed an `Evaluator` the same things in time order: each `Change` of the home (with the
`HomeView` before and after it), each scheduled moment of a time or sun trigger (`moment`), and
each `for_seconds` timer that comes due (`timer`); each answers the `Firing`s it starts. The
live engine hears changes on the change feed and waits on real clocks; the dry run reads them
from the audit trail and the telemetry and steps a simulated clock. Conditions are judged on the
view at the firing (`conditions_hold`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

from django.utils.translation import gettext, gettext_noop

from automations import schedules
from automations.definition import (
    AgentCondition,
    AgentTrigger,
    AlarmCondition,
    AlarmTrigger,
    Condition,
    Definition,
    LightCondition,
    LightTrigger,
    PresenceCondition,
    PresenceTrigger,
    SensorCondition,
    SensorTrigger,
    SunCondition,
    SunTrigger,
    TimeCondition,
    TimeTrigger,
)

ChangeKind = Literal["light", "alarm", "presence", "sensor", "agent"]
ChangeKey = tuple[ChangeKind, str | None]  # a change's kind and name; None: any name


def sensor_key(zone: str, channel: str) -> str:
    return f"{zone}/{channel}"


@dataclass(frozen=True)
class Change:
    """One change of the home: a light, the alarm ("" as name), a person, a sensor's value
    (name `zone/channel`) or an agent (online or not). `by` names the automation whose run made
    it ("" for anyone else), which the loop guard follows."""

    kind: ChangeKind
    name: str
    value: bool | float
    at: datetime
    by: str = ""


def change_keys(change: Change) -> tuple[ChangeKey, ChangeKey]:
    """The keys of `Evaluator.concerns` a change is for: its own and its kind's (any name)."""
    return (change.kind, change.name), (change.kind, None)


@dataclass
class HomeView:
    """The home as the evaluation sees it at one moment."""

    lights: dict[str, bool] = field(default_factory=dict)
    people: dict[str, bool] = field(default_factory=dict)
    armed: bool = False
    sensors: dict[str, float] = field(default_factory=dict)  # zone/channel -> latest value
    agents: dict[str, bool] = field(default_factory=dict)  # agent id -> online

    def copy(self) -> HomeView:
        return HomeView(
            dict(self.lights), dict(self.people), self.armed, dict(self.sensors), dict(self.agents)
        )

    def apply(self, change: Change) -> None:
        if change.kind == "light":
            self.lights[change.name] = bool(change.value)
        elif change.kind == "presence":
            self.people[change.name] = bool(change.value)
        elif change.kind == "alarm":
            self.armed = bool(change.value)
        elif change.kind == "sensor":
            self.sensors[change.name] = float(change.value)
        else:
            self.agents[change.name] = bool(change.value)

    def presence(self, person: str | None, who: str | None, home: bool) -> bool:
        """Whether the person is home (or away); for who="everyone", everyone is home, or
        nobody is; for "anyone", someone is home, or someone is away."""
        if person is not None:
            return self.people.get(person, False) == home
        if who == "everyone":
            return bool(self.people) and all(p == home for p in self.people.values())
        return any(p == home for p in self.people.values())


@dataclass(frozen=True)
class Firing:
    """A trigger that fired: which (its index in the definition), when, and a description for
    the run's trace."""

    index: int
    at: datetime
    trigger: dict[str, Any]


def _described(trigger: Any, **extra: Any) -> dict[str, Any]:
    return {**trigger.model_dump(mode="json", exclude_none=True), **extra}


class Evaluator:
    """One automation's triggers over a stream of changes and moments.

    `armed` holds the `for_seconds` timers running: trigger index -> when its value crossed
    into the threshold. It is the only state (the live engine keeps it in the automation's row,
    so a timer survives a restart)."""

    def __init__(self, definition: Definition, armed: dict[int, datetime] | None = None) -> None:
        self.definition = definition
        self.armed: dict[int, datetime] = dict(armed or {})
        # Found once: the engine's loop asks every held automation for them each time it wakes.
        self._scheduled = [
            (i, t) for i, t in enumerate(definition.triggers) if isinstance(t, TimeTrigger | SunTrigger)
        ]

    def concerns(self) -> set[ChangeKey]:
        """The changes `on_change` can answer anything for (fire a trigger, start or stop a
        `for_seconds` timer): `(kind, name)`, with name None for every change of that kind (a
        presence trigger on everyone or anyone). Every other change leaves this evaluator as
        it was and fires nothing, so an engine need only hand it those (`change_keys`)."""
        keys: set[ChangeKey] = set()
        for trigger in self.definition.triggers:
            if isinstance(trigger, LightTrigger):
                keys.add(("light", trigger.name))
            elif isinstance(trigger, AlarmTrigger):
                keys.add(("alarm", ""))
            elif isinstance(trigger, PresenceTrigger):
                keys.add(("presence", trigger.person))
            elif isinstance(trigger, AgentTrigger):
                keys.add(("agent", trigger.agent))
            elif isinstance(trigger, SensorTrigger):
                keys.add(("sensor", sensor_key(trigger.zone, trigger.channel)))
        return keys

    def on_change(self, change: Change, before: HomeView, after: HomeView) -> list[Firing]:
        fired: list[Firing] = []
        for index, trigger in enumerate(self.definition.triggers):
            if isinstance(trigger, SensorTrigger):
                firing = self._sensor(index, trigger, change, before, after)
            elif _matches(trigger, change, before, after):
                firing = Firing(index, change.at, _described(trigger, change=_change_text(change)))
            else:
                firing = None
            if firing is not None:
                fired.append(firing)
        return fired

    def _sensor(
        self, index: int, trigger: SensorTrigger, change: Change, before: HomeView, after: HomeView
    ) -> Firing | None:
        key = sensor_key(trigger.zone, trigger.channel)
        if change.kind != "sensor" or change.name != key:
            return None
        was = key in before.sensors and trigger.within(before.sensors[key])
        now = trigger.within(after.sensors[key])
        if not now:
            self.armed.pop(index, None)
            return None
        if was:
            return None
        if trigger.for_seconds:
            self.armed[index] = change.at
            return None
        return Firing(index, change.at, _described(trigger, value=after.sensors[key]))

    def timers(self) -> dict[int, datetime]:
        """When each running `for_seconds` timer comes due."""
        out = {}
        for index, since in self.armed.items():
            trigger = self.definition.triggers[index]
            assert isinstance(trigger, SensorTrigger)
            out[index] = since + timedelta(seconds=trigger.for_seconds)
        return out

    def timer(self, index: int, at: datetime, view: HomeView) -> Firing | None:
        """Timer `index` came due at `at`: it fires if the value is still past the threshold."""
        since = self.armed.pop(index, None)
        trigger = self.definition.triggers[index]
        if since is None or not isinstance(trigger, SensorTrigger):
            return None
        value = view.sensors.get(sensor_key(trigger.zone, trigger.channel))
        if value is None or not trigger.within(value):
            return None
        return Firing(index, at, _described(trigger, value=value, held_since=since.isoformat()))

    def moment(self, index: int, at: datetime) -> Firing:
        """Time or sun trigger `index` falls at `at`."""
        return Firing(index, at, _described(self.definition.triggers[index]))

    def scheduled(self) -> list[tuple[int, TimeTrigger | SunTrigger]]:
        return self._scheduled


def _change_text(change: Change) -> str:
    return f"{change.kind} {change.name} -> {change.value}".replace("  ", " ")


def _matches(trigger: Any, change: Change, before: HomeView, after: HomeView) -> bool:
    if isinstance(trigger, LightTrigger):
        return (
            change.kind == "light"
            and change.name == trigger.name
            and after.lights.get(trigger.name) == (trigger.to == "on")
            and before.lights.get(trigger.name) != after.lights.get(trigger.name)
        )
    if isinstance(trigger, AlarmTrigger):
        return (
            change.kind == "alarm" and before.armed != after.armed and after.armed == (trigger.to == "armed")
        )
    if isinstance(trigger, PresenceTrigger):
        if change.kind != "presence" or (trigger.person is not None and change.name != trigger.person):
            return False
        home = trigger.to == "home"
        if trigger.who == "anyone":  # someone arrived, or someone left
            return (
                before.people.get(change.name, False) != home and after.people.get(change.name, False) == home
            )
        return after.presence(trigger.person, trigger.who, home) and not before.presence(
            trigger.person, trigger.who, home
        )
    if isinstance(trigger, AgentTrigger):
        return (
            change.kind == "agent"
            and change.name == trigger.agent
            and before.agents.get(trigger.agent) != after.agents.get(trigger.agent)
            and after.agents.get(trigger.agent) == (trigger.to == "online")
        )
    return False


def conditions_hold(definition: Definition, view: HomeView, at: datetime) -> list[dict[str, Any]]:
    """Each condition with its result, in order ({"condition", "ok", "why"}); the run goes on
    only if every one is ok."""
    return [_judge(condition, view, at) for condition in definition.conditions]


def _judge(condition: Condition, view: HomeView, at: datetime) -> dict[str, Any]:
    ok: bool
    why: str
    if isinstance(condition, LightCondition):
        on = view.lights.get(condition.name)
        ok, why = on == (condition.is_ == "on"), f"{condition.name} is {'on' if on else 'off'}"
    elif isinstance(condition, PresenceCondition):
        ok = view.presence(condition.person, condition.who, condition.is_ == "home")
        home = sorted(name for name, present in view.people.items() if present)
        why = "home: " + (", ".join(home) or "nobody")
    elif isinstance(condition, AlarmCondition):
        ok, why = view.armed == condition.armed, "armed" if view.armed else "disarmed"
    elif isinstance(condition, SensorCondition):
        value = view.sensors.get(sensor_key(condition.zone, condition.channel))
        ok = value is not None and condition.within(value)
        why = "no value yet" if value is None else f"value {value:g}"
    elif isinstance(condition, AgentCondition):
        online = view.agents.get(condition.agent, False)
        ok, why = online == (condition.is_ == "online"), "online" if online else "offline"
    elif isinstance(condition, SunCondition):
        up = schedules.sun_is_up(at)
        ok, why = up == (condition.is_ == "up"), "the sun is up" if up else "the sun is down"
    else:
        ok, why = _in_window(condition, at)
    return {
        "condition": condition.model_dump(mode="json", by_alias=True, exclude_none=True),
        "ok": ok,
        "why": why,
    }


# A condition's `why` is kept in English (in a run's trace, in a dry run's answer); a page shows
# it in its reader's language (`why_shown`). These are its fixed words, marked for the catalog.
_WHY_WORDS = {
    word: word
    for word in (
        gettext_noop("armed"),
        gettext_noop("disarmed"),
        gettext_noop("online"),
        gettext_noop("offline"),
        gettext_noop("no value yet"),
        gettext_noop("the sun is up"),
        gettext_noop("the sun is down"),
        gettext_noop("nobody"),
        gettext_noop("mon"),
        gettext_noop("tue"),
        gettext_noop("wed"),
        gettext_noop("thu"),
        gettext_noop("fri"),
        gettext_noop("sat"),
        gettext_noop("sun"),
    )
}
_LIGHT_WHY = re.compile(r"(?P<name>.+) is (?P<state>on|off)")
_CLOCK_WHY = re.compile(r"(?P<day>mon|tue|wed|thu|fri|sat|sun) (?P<clock>\d\d:\d\d)")


def why_shown(why: str) -> str:
    """A condition's `why`, as `_judge` words it, in the active language (any other text as it is)."""
    if why in _WHY_WORDS:
        return gettext(why)
    if why.startswith("home: "):
        people = why.removeprefix("home: ")
        return gettext("home: %(people)s") % {"people": gettext(people) if people == "nobody" else people}
    if why.startswith("value "):
        return gettext("value %(value)s") % {"value": why.removeprefix("value ")}
    if light := _LIGHT_WHY.fullmatch(why):
        said = gettext("%(name)s is on") if light["state"] == "on" else gettext("%(name)s is off")
        return said % {"name": light["name"]}
    if clock := _CLOCK_WHY.fullmatch(why):
        return f"{gettext(clock['day'])} {clock['clock']}"
    return why


def _in_window(condition: TimeCondition, at: datetime) -> tuple[bool, str]:
    local = at.astimezone(schedules.home_zone())
    clock = local.strftime("%H:%M")
    day = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")[local.weekday()]
    ok = condition.weekdays is None or day in condition.weekdays
    after, before = condition.after, condition.before
    if after is not None and before is not None and after > before:  # crosses midnight
        ok = ok and (clock >= after or clock < before)
    else:
        ok = ok and (after is None or clock >= after) and (before is None or clock < before)
    return ok, f"{day} {clock}"
