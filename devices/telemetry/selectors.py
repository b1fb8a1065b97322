"""Reads of telemetry: each sensor's latest value, a sensor's history and a chart's points."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from itertools import pairwise
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


def sensor_labels() -> dict[str, str]:
    """The labels owners gave sensors, by path (sensors without one are left out)."""
    return {
        f"{zone}/{device_type}/{device_id}/{channel}": label
        for zone, device_type, device_id, channel, label in Sensor.objects.exclude(label="").values_list(
            *SENSOR_FIELDS, "label"
        )
    }


DEFAULT_INTERVAL = timedelta(minutes=5)  # a sensor with too few readings to tell its own
STALE_AFTER = 3  # usual intervals without a reading
RECENT_READINGS = 11  # the gaps between these tell a sensor's usual interval
MIN_INTERVAL = timedelta(seconds=10)  # a burst of readings does not make a sensor "stale" in seconds


def usual_interval(times: list[datetime]) -> timedelta:
    """The median gap between `times` (newest first); DEFAULT_INTERVAL with fewer than two."""
    gaps = sorted(abs(a - b) for a, b in pairwise(times))
    if not gaps:
        return DEFAULT_INTERVAL
    middle = len(gaps) // 2
    median = gaps[middle] if len(gaps) % 2 else (gaps[middle - 1] + gaps[middle]) / 2
    return max(median, MIN_INTERVAL)


def is_stale(times: list[datetime], now: datetime) -> bool:
    """Whether a sensor whose latest readings came at `times` (newest first) has been silent
    for longer than STALE_AFTER of its usual intervals."""
    return bool(times) and now - times[0] > STALE_AFTER * usual_interval(times)


def stale_sensors(now: datetime | None = None) -> set[str]:
    """The paths of the sensors whose latest reading is older than they usually wait (one
    indexed look at each sensor's newest readings)."""
    now = now or timezone.now()
    stale = set()
    for zone, device_type, device_id, channel in Sensor.objects.values_list(*SENSOR_FIELDS):
        key = SensorKey(zone, device_type, device_id, channel)
        times = list(sensor_readings(key).values_list("measured_at", flat=True)[:RECENT_READINGS])
        if is_stale(times, now):
            stale.add(key.path)
    return stale
