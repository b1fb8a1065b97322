"""Telemetry's REST router: every sensor's latest value and a sensor's selectors."""

from __future__ import annotations

from datetime import datetime

from django.http import HttpRequest
from django.utils.translation import gettext
from ninja import Router, Schema, Status

from common.rest import Error, Limit, Name, Offset, aware, need
from devices.telemetry import selectors
from devices.telemetry.schemas import SensorOut

router = Router(tags=["telemetry"])


class ReadingOut(Schema):
    value: float
    unit: str
    measured_at: datetime


class ReadingPage(Schema):
    sensor: str
    count: int
    limit: int
    offset: int
    items: list[ReadingOut]


@router.get("/sensors", response=list[SensorOut], summary="Every sensor's latest value")
def list_sensors(request: HttpRequest):
    need(request, "read")
    return selectors.latest_readings()


@router.get(
    "/telemetry/{zone}/{device_type}/{device_id}/{channel}",
    response={200: ReadingPage, 404: Error},
    summary="A sensor's history, newest first",
)
def sensor_history(
    request: HttpRequest,
    zone: Name,
    device_type: Name,
    device_id: Name,
    channel: Name,
    since: datetime | None = None,
    until: datetime | None = None,
    limit: Limit = 100,
    offset: Offset = 0,
):
    need(request, "read")
    key = selectors.SensorKey(zone, device_type, device_id, channel)
    if not selectors.sensor_exists(key):
        return Status(404, {"detail": gettext("No readings for sensor '%(sensor)s'.") % {"sensor": key.path}})
    readings = selectors.sensor_readings(key, aware(since), aware(until))
    items = list(readings.values("value", "unit", "measured_at")[offset : offset + limit])
    return {"sensor": key.path, "count": readings.count(), "limit": limit, "offset": offset, "items": items}
