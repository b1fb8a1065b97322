"""What an automation would have done over the recorded past, changing nothing.

The home's history (`automations.history`: its view at the window's start and every change
since) is replayed through the same `Evaluator` and `conditions_hold` the live engine uses, in
time order with the schedule's moments (`schedules.next_after`) and the `for_seconds` timers
coming due: when a change, a moment and a timer fall at the same instant, the timer and the
moment are judged first, on the view before the change. Each firing reports its conditions and,
when they held, what each action would have done.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone
from django.utils.translation import gettext, ngettext

from automations import schedules
from automations.definition import (
    Definition,
    DelayAction,
    NotifyAction,
    SceneAction,
    SensorCondition,
    SensorTrigger,
    ToolAction,
)
from automations.errors import AutomationError
from automations.evaluation import Change, Evaluator, Firing, HomeView, conditions_hold, why_shown
from automations.history import changes_between
from automations.models import Scene
from automations.schemas import DryFiring, DryRunOut, PlannedAction, ToolCallOut
from automations.services import LIGHT_TOOL
from automations.validation import known_tool, validate
from mcp_endpoint.engine.registry import registry

DAYS_MAX = 31
FIRINGS_MAX = 200  # reported; more set `truncated`


def dry_run(
    data: dict[str, Any], days: int = 7, *, now: datetime | None = None, scopes: frozenset[str] | None = None
) -> DryRunOut:
    """Replay the last `days` (1 to DAYS_MAX) of the home's history through the definition in
    `data` (checked as a save checks it: DefinitionError). `scopes`: whose rights the actions
    would run with, for each tool action's `allowed` (None: any scope)."""
    if not isinstance(days, int) or not 1 <= days <= DAYS_MAX:
        raise AutomationError("days: " + gettext("must be 1 to %(n)s") % {"n": DAYS_MAX})
    definition = validate(data)
    end = now or timezone.now()
    start = end - timedelta(days=days)
    view, changes = changes_between(start, end, sensors=_sensors(definition))
    planned = _planned(definition, scopes)
    replay = _Replay(definition, view, end)
    fired: list[DryFiring] = []
    truncated = False
    for firing, caused_by in replay.firings(start, changes):
        if len(fired) == FIRINGS_MAX:
            truncated = True
            break
        conditions = conditions_hold(definition, replay.view, firing.at)
        ran = all(c["ok"] for c in conditions)
        fired.append(
            {
                "at": firing.at.isoformat(),
                "trigger": firing.trigger,
                "caused_by": caused_by,
                "conditions": conditions,
                "ran": ran,
                "actions": planned if ran else [],
            }
        )
    return {
        "name": definition.name,
        "from": start.isoformat(),
        "to": end.isoformat(),
        "changes_replayed": replay.replayed,
        "automation_changes": sum(1 for c in changes[: replay.replayed] if c.by),
        "fired": fired,
        "truncated": truncated,
    }


class _Replay:
    """The stream of firings over the changes, the schedule's moments and the timers, in time
    order; `view` is the home at the firing last yielded."""

    def __init__(self, definition: Definition, view: HomeView, end: datetime) -> None:
        self.evaluator = Evaluator(definition)
        self.view = view
        self.end = end
        self.replayed = 0

    def firings(self, start: datetime, changes: list[Change]) -> Iterator[tuple[Firing, str | None]]:
        moments = {i: schedules.next_after(t, start) for i, t in self.evaluator.scheduled()}
        scheduled = dict(self.evaluator.scheduled())
        for change in [*changes, None]:
            until = self.end if change is None else change.at
            while True:  # the timers and moments due before (or at) this change
                due = [(at, 0, i) for i, at in self.evaluator.timers().items() if at <= until]
                due += [(at, 1, i) for i, at in moments.items() if at is not None and at <= until]
                if not due:
                    break
                at, what, index = min(due)
                firing: Firing | None
                if what == 0:
                    firing = self.evaluator.timer(index, at, self.view)
                else:
                    firing = self.evaluator.moment(index, at)
                    moments[index] = schedules.next_after(scheduled[index], at)
                if firing is not None:
                    yield firing, None
            if change is None:
                return
            before = self.view.copy()
            self.view.apply(change)
            self.replayed += 1
            for firing in self.evaluator.on_change(change, before, self.view):
                yield firing, change.by or None


def _sensors(definition: Definition) -> set[tuple[str, str]]:
    """The (zone, channel) pairs the definition's triggers and conditions read."""
    return {
        (item.zone, item.channel)
        for item in [*definition.triggers, *definition.conditions]
        if isinstance(item, SensorTrigger | SensorCondition)
    }


def _planned(definition: Definition, scopes: frozenset[str] | None) -> list[PlannedAction]:
    """What each action would do (the same at every firing: an action has no variables)."""
    planned: list[PlannedAction] = []
    for action in definition.actions:
        if isinstance(action, ToolAction):
            found = known_tool(action.tool)
            allowed = (
                found is not None
                and registry.enabled(action.tool)
                and (scopes is None or found.scope in scopes)
            )
            planned.append(
                {"kind": "tool", "tool": action.tool, "arguments": action.arguments, "allowed": allowed}
            )
        elif isinstance(action, SceneAction):
            planned.append({"kind": "scene", "scene": action.scene, "steps": _scene_steps(action.scene)})
        elif isinstance(action, DelayAction):
            planned.append({"kind": "delay", "delay_seconds": action.delay_seconds})
        elif isinstance(action, NotifyAction):
            planned.append(
                {"kind": "notify", "notify": action.notify, "title": action.title, "level": action.level}
            )
    return planned


def _scene_steps(name: str) -> list[ToolCallOut]:
    scene = Scene.objects.filter(name=name).first()
    if scene is None:
        return []
    steps: list[ToolCallOut] = [
        {"tool": LIGHT_TOOL, "arguments": {"name": light, "on": on}} for light, on in scene.lights.items()
    ]
    return steps + [{"tool": c["tool"], "arguments": c.get("arguments", {})} for c in scene.tool_calls]


def described(out: DryRunOut) -> str:
    """A dry run in words, for a person deciding whether to let the automation run (in the
    language of the page that shows it)."""
    fired = len(out["fired"])
    counted = {"start": out["from"][:16], "end": out["to"][:16], "n": fired}
    head = ngettext(
        "From %(start)s to %(end)s: %(n)s firing", "From %(start)s to %(end)s: %(n)s firings", fired
    )
    head %= counted
    if out["truncated"]:
        head += " " + gettext("(more not shown)")
    replayed = out["changes_replayed"]
    head += ", " + ngettext("%(n)s change replayed.", "%(n)s changes replayed.", replayed) % {"n": replayed}
    lines = [head]
    for firing in out["fired"]:
        trigger = firing["trigger"].get("type", "?")
        failed = [why_shown(c["why"]) for c in firing["conditions"] if not c["ok"]]
        outcome = (
            gettext("would run")
            if firing["ran"]
            else gettext("conditions not met (%(why)s)") % {"why": "; ".join(failed)}
        )
        lines.append(f"{firing['at'][:19]}  {trigger}: {outcome}")
    ran = next((f["actions"] for f in out["fired"] if f["ran"]), None)
    if ran:
        lines.append(gettext("Each run would do:"))
        lines += [f"  {json.dumps(action, ensure_ascii=False)}" for action in ran]
    return "\n".join(lines)
