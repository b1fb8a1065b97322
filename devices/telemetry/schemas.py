"""Telemetry's row shapes that clients see, each declared once: what the selectors return, the
REST API answers and the MCP tools declare as their output (`common.schemas`). Their names are
the ones clients see (OpenAPI components, MCP `$defs`)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import Field
from typing_extensions import TypedDict


class SensorOut(TypedDict):
    # A sensor's latest value.
    path: str  # zone/device_type/device_id/channel
    zone: str
    device_type: str
    device_id: str
    channel: str
    value: float
    unit: str
    measured_at: datetime


# The MCP tools' answers: times in ISO 8601


class SensorValue(TypedDict):
    path: Annotated[str, Field(description="zone/device_type/device_id/channel")]
    value: float
    unit: str
    measured_at: str


class SensorValues(TypedDict):
    sensors: list[SensorValue]


class SensorPoint(TypedDict):
    at: str
    value: float


class SensorHistory(TypedDict):
    path: str
    unit: str
    since: str
    until: str
    points: list[SensorPoint]
