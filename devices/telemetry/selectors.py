"""Reads of telemetry: each sensor's latest value, a sensor's history and a chart's points."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TypedDict

from django.db.models import Q, QuerySet
from django.utils import timezone

from devices.telemetry.models import Sensor, TelemetryReading
from devices.telemetry.schemas import SensorOut

RANGES = {"hour": timedelta(hours=1), "day": timedelta(days=1), "week": timedelta(weeks=1)}


SENSOR_FIELDS = ("zone", "device_type", "device_id", "channel")


@dataclass(frozen=True, slots=True)
class SensorKey:
    zone: str
    device_type: str
    device_id: str
    channel: str

    @property
    def path(self) -> str:
        return f"{self.zone}/{self.device_type}/{self.device_id}/{self.channel}"

    def filter(self) -> Q:
        return Q(zone=self.zone, device_type=self.device_type, device_id=self.device_id, channel=self.channel)


class SensorSeries(TypedDict):
    since: datetime
    until: datetime
    unit: str
    points: list[tuple[datetime, float]]  # oldest first


def latest_readings() -> list[SensorOut]:
    """The newest reading of every sensor, ordered by zone, device and channel (from the
    sensors table the MQTT worker keeps current: no scan of the history)."""
    return [
        {
            "path": f"{zone}/{device_type}/{device_id}/{channel}",
            "zone": zone,
            "device_type": device_type,
            "device_id": device_id,
            "channel": channel,
            "value": value,
            "unit": unit,
            "measured_at": measured_at,
        }
        for zone, device_type, device_id, channel, value, unit, measured_at in Sensor.objects.values_list(
            *SENSOR_FIELDS, "value", "unit", "measured_at"
        )
    ]


def sensor_exists(key: SensorKey) -> bool:
    return Sensor.objects.filter(key.filter()).exists()


def sensor_readings(
    key: SensorKey, since: datetime | None = None, until: datetime | None = None
) -> QuerySet[TelemetryReading]:
    """A sensor's readings in [since, until], newest first."""
    readings = TelemetryReading.objects.filter(key.filter())
    if since is not None:
        readings = readings.filter(measured_at__gte=since)
    if until is not None:
        readings = readings.filter(measured_at__lte=until)
    return readings.order_by("-measured_at", "-id")


def sensor_series(key: SensorKey, range_name: str, *, max_points: int = 2000) -> SensorSeries:
    """The points of a chart for `range_name` (hour, day, week): oldest first, at most `max_points`
    (evenly thinned when the range holds more)."""
    now = timezone.now()
    since = now - RANGES[range_name]
    rows = list(sensor_readings(key, since, now).values_list("measured_at", "value", "unit"))
    rows.reverse()
    if len(rows) > max_points:
        step = len(rows) / max_points
        rows = [rows[int(i * step)] for i in range(max_points - 1)] + [rows[-1]]
    unit = rows[-1][2] if rows else ""
    return {"since": since, "until": now, "unit": unit, "points": [(at, value) for at, value, _ in rows]}
