"""The home's row shapes, each declared once: what the selectors return, the REST API answers
and the MCP tools declare as their output (`common.schemas`). Their names are the ones clients
see (OpenAPI components, MCP `$defs`)."""

from __future__ import annotations

from datetime import datetime

from typing_extensions import TypedDict

# Seed 000's tool shapes


class PresenceOut(TypedDict):
    present: bool
    known_people: list[str]


class AlarmStatusOut(TypedDict):
    armed: bool


class LightsOnOut(TypedDict):
    on: list[str]


class AllStatesOut(TypedDict):
    lights: dict[str, bool]
    alarm: bool
    presence: PresenceOut


# Rows for the dashboard and the REST API


class LightOut(TypedDict):
    name: str
    label: str
    room: str
    on: bool
    updated_at: datetime


class AlarmOut(TypedDict):
    armed: bool
    updated_at: datetime | None


class PersonOut(TypedDict):
    name: str
    present: bool
    updated_at: datetime
