"""The engine's reads: the home as a `HomeView`, the rights an automation's runs act with,
and how deep in a chain of automations a run is."""

from __future__ import annotations

from django.contrib.auth import get_user_model

from automations.evaluation import HomeView, sensor_key
from automations.models import AutomationRun
from common import roles
from devices.agents.models import Agent
from devices.home.models import Alarm, Light, Person
from devices.telemetry.selectors import latest_readings
from mcp_endpoint.auth.scopes import scopes as declared_scopes


def read_view() -> HomeView:
    """The home now, from the database."""
    alarm = Alarm.objects.filter(pk=Alarm.SINGLETON_PK).values_list("armed", flat=True).first()
    return HomeView(
        lights=dict(Light.objects.values_list("name", "on")),
        people=dict(Person.objects.values_list("name", "present")),
        armed=bool(alarm),
        sensors={sensor_key(r["zone"], r["channel"]): float(r["value"]) for r in latest_readings()},
        agents=dict(Agent.objects.values_list("agent_id", "online")),
    )


class NotAnOwner(Exception):
    """The account that enabled the automation is gone or no longer an owner: its runs fail."""


def acting_scopes(user_id: int | None) -> frozenset[str]:
    """The scopes an automation enabled by account `user_id` acts with: what an owner's role
    allows (every declared scope). NotAnOwner saying why when the account may no longer."""
    user = get_user_model().objects.filter(pk=user_id).first() if user_id is not None else None
    if user is None:
        raise NotAnOwner("the account that enabled it no longer exists")
    role = roles.role_of(user)
    if role != roles.OWNER:
        raise NotAnOwner(
            f"{user.get_username()}, who enabled it, is no longer an owner (now: {role or 'inactive'})"
        )
    return roles.scopes_within(role, declared_scopes.names())


def chain_depth(name: str) -> int:
    """How deep in a chain the newest run of automation `name` is (0 when it never ran): a
    change that run made starts runs one deeper."""
    depth = (
        AutomationRun.objects.filter(automation__name=name)
        .order_by("-started_at", "-id")
        .values_list("depth", flat=True)
        .first()
    )
    return depth or 0
