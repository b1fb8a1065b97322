"""Telemetry's row shapes that clients see, each declared once: what the selectors return and
the REST API answers (`common.schemas`). Their names are the OpenAPI components'."""

from __future__ import annotations

from datetime import datetime

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
