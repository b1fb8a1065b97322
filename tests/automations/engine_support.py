"""Automations for the engine's tests, made as the authoring side leaves them (enabled by an
owner), and a clock the test moves."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from django.contrib.auth import get_user_model

from automations.definition import parse
from automations.models import Automation, AutomationRun


def owner() -> Any:
    users = get_user_model().objects
    return users.filter(username="boss").first() or users.create_superuser("boss", "boss@example.com", "pw-x")


def automation(
    name: str, triggers: list[dict[str, Any]], actions: list[dict[str, Any]], **more: Any
) -> Automation:
    """An enabled automation `name` (its definition checked by `parse`), enabled by an owner."""
    definition = parse({"name": name, "triggers": triggers, "actions": actions, **more}).as_json()
    return Automation.objects.create(name=name, definition=definition, enabled=True, enabled_by=owner())


def runs(name: str) -> list[AutomationRun]:
    """Its runs, oldest first."""
    return list(AutomationRun.objects.filter(automation__name=name).order_by("started_at", "id"))


def light_event(name: str, on: bool, by: str = "") -> dict[str, Any]:
    """The change feed's event of a light switched (by automation `by`, or by someone)."""
    who = (
        {"actor": f"automation:{by}", "interface": "automation"}
        if by
        else {"actor": "ana", "interface": "dashboard"}
    )
    return {"kind": "light", "name": name, "on": on, **who}


class Clock:
    """A clock the test sets and moves."""

    def __init__(self, at: datetime = datetime(2026, 3, 2, 8, 0, 30, tzinfo=UTC)) -> None:
        self.at = at

    def __call__(self) -> datetime:
        return self.at

    def move(self, **delta: float) -> datetime:
        self.at += timedelta(**delta)
        return self.at
