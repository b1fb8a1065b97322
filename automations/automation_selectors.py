"""Reads of automations: the list (with each one's last run and next scheduled moment), one
automation with its versions and latest runs, and runs with their traces."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db.models import QuerySet
from django.utils import timezone

from automations import schedules
from automations.definition import parse
from automations.errors import DefinitionError
from automations.evaluation import Evaluator
from automations.models import Automation, AutomationRun, AutomationVersion
from automations.schemas import (
    AutomationDetail,
    AutomationRow,
    AutomationRunOut,
    AutomationVersionOut,
    RunBrief,
)

RUNS_MAX = 200
DETAIL_RUNS = 20


def automation_list() -> list[AutomationRow]:
    rows = list(Automation.objects.select_related("enabled_by"))
    last: dict[int, RunBrief] = {}
    for automation_id, started_at, status in (
        AutomationRun.objects.filter(automation__in=rows)
        .order_by("automation_id", "-started_at", "-id")
        .values_list("automation_id", "started_at", "status")
    ):
        last.setdefault(automation_id, {"started_at": started_at.isoformat(), "status": status})
    now = timezone.now()
    return [_row(row, last.get(row.pk), now) for row in rows]


def automation_detail(name: str) -> AutomationDetail | None:
    row = Automation.objects.select_related("enabled_by").filter(name=name).first()
    if row is None:
        return None
    runs = _runs(AutomationRun.objects.filter(automation=row), DETAIL_RUNS)
    last: RunBrief | None = (
        {"started_at": runs[0]["started_at"], "status": runs[0]["status"]} if runs else None
    )
    versions: list[AutomationVersionOut] = [
        {
            "number": v.number,
            "definition": v.definition,
            "actor": v.actor,
            "interface": v.interface,
            "saved_at": v.saved_at.isoformat(),
        }
        for v in AutomationVersion.objects.filter(automation=row).order_by("-number")
    ]
    listed = _row(row, last, timezone.now())
    return {
        **listed,
        "enabled_at": row.enabled_at.isoformat() if row.enabled_at else None,
        "definition": row.definition,
        "versions": versions,
        "runs": runs,
    }


def automation_runs(name: str | None, limit: int) -> list[AutomationRunOut]:
    """The latest runs (of automation `name`, or of all), newest first, at most `limit`
    (bounded by RUNS_MAX)."""
    runs = AutomationRun.objects.all()
    if name is not None:
        runs = runs.filter(automation__name=name)
    return _runs(runs, limit)


def _runs(runs: QuerySet[AutomationRun], limit: int) -> list[AutomationRunOut]:
    return [
        {
            "automation": run.automation.name,
            "version": run.version,
            "started_at": run.started_at.isoformat(),
            "finished_at": run.finished_at.isoformat() if run.finished_at else None,
            "status": run.status,
            "trigger": run.trigger,
            "trace": run.trace,
            "depth": run.depth,
        }
        for run in runs.select_related("automation").order_by("-started_at", "-id")[
            : max(0, min(limit, RUNS_MAX))
        ]
    ]


def automation_row(row: Automation) -> AutomationRow:
    """One automation as the list shows it (after a write)."""
    last = AutomationRun.objects.filter(automation=row).order_by("-started_at", "-id").first()
    brief: RunBrief | None = (
        None if last is None else {"started_at": last.started_at.isoformat(), "status": last.status}
    )
    return _row(row, brief, timezone.now())


def _row(row: Automation, last: RunBrief | None, now: datetime) -> AutomationRow:
    return {
        "name": row.name,
        "description": str(row.definition.get("description", "")),
        "enabled": row.enabled,
        "version": row.version,
        "enabled_by": row.enabled_by.get_username() if row.enabled_by is not None else None,
        "last_run": last,
        "next_run": next_run(row, now),
    }


def next_run(row: Automation, now: datetime) -> str | None:
    """The earliest moment after `now` when an enabled automation's time or sun trigger falls;
    None when it is disabled or has none (or a sun trigger has no location now)."""
    if not row.enabled:
        return None
    try:
        scheduled = Evaluator(parse(row.definition)).scheduled()
        moments = [m for _, trigger in scheduled if (m := schedules.next_after(trigger, now)) is not None]
    except (DefinitionError, schedules.ScheduleError):
        return None
    return min(moments).isoformat() if moments else None


def version_definition(name: str, number: int) -> dict[str, Any] | None:
    """The definition automation `name` was saved with as version `number`."""
    found: dict[str, Any] | None = (
        AutomationVersion.objects.filter(automation__name=name, number=number)
        .values_list("definition", flat=True)
        .first()
    )
    return found
