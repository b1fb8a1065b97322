"""When the timed triggers fall: cron expressions (cronsim) in the home's time zone
(TIME_ZONE), sunrise and sunset (astral) at HOMEHUB_LOCATION ("latitude,longitude"). The live
engine and the dry run both ask `next_after`, so a schedule fires at the same moments in both.
"""

from __future__ import annotations

import zoneinfo
from datetime import date, datetime, timedelta

from astral import LocationInfo
from astral.sun import sun
from cronsim import CronSim, CronSimError
from django.conf import settings

from automations.definition import SunTrigger, TimeTrigger

SUN_SEARCH_DAYS = 3  # near the poles a day may have no sunrise; look this far before giving up


class ScheduleError(ValueError):
    """A cron expression that does not parse, or a sun trigger without a location."""


def home_zone() -> zoneinfo.ZoneInfo:
    return zoneinfo.ZoneInfo(settings.TIME_ZONE)


def location() -> LocationInfo:
    """The home's place from HOMEHUB_LOCATION; ScheduleError when unset or malformed."""
    raw = settings.HOMEHUB_LOCATION
    if not raw:
        raise ScheduleError(
            "a sun trigger needs the home's location: set HOMEHUB_LOCATION to 'latitude,longitude'"
        )
    try:
        lat, lon = (float(part) for part in raw.split(","))
    except ValueError:
        raise ScheduleError(f"HOMEHUB_LOCATION must be 'latitude,longitude', not {raw!r}") from None
    if not (-90 <= lat <= 90 and -180 <= lon <= 180):
        raise ScheduleError(f"HOMEHUB_LOCATION {raw!r} is not a place on Earth")
    return LocationInfo("home", "", settings.TIME_ZONE, lat, lon)


def check_cron(expression: str) -> None:
    """ScheduleError naming what is wrong when `expression` is not five valid cron fields."""
    if len(expression.split()) != 5:
        raise ScheduleError(f"'{expression}' must have five fields (minute hour day month weekday)")
    try:
        CronSim(expression, datetime(2000, 1, 1, tzinfo=home_zone()))
    except CronSimError as exc:
        raise ScheduleError(f"'{expression}' does not parse: {exc}") from None


def next_after(trigger: TimeTrigger | SunTrigger, after: datetime) -> datetime | None:
    """The first moment strictly after `after` (aware) when `trigger` falls; None if never."""
    if isinstance(trigger, TimeTrigger):
        try:
            return next(CronSim(trigger.cron, after.astimezone(home_zone())))
        except (CronSimError, StopIteration):
            return None
    place = location()
    offset = timedelta(minutes=trigger.offset_minutes)
    day = after.astimezone(home_zone()).date() - timedelta(days=1)  # an offset may cross midnight
    for _ in range(SUN_SEARCH_DAYS + 2):
        moment = _sun_event(place, day, trigger.event)
        if moment is not None and moment + offset > after:
            return moment + offset
        day += timedelta(days=1)
    return None


def _sun_event(place: LocationInfo, day: date, event: str) -> datetime | None:
    try:
        times = sun(place.observer, date=day, tzinfo=home_zone())
    except ValueError:  # the sun never rises or never sets that day there
        return None
    moment: datetime = times[event]
    return moment


def sun_is_up(at: datetime) -> bool:
    """Whether the sun is above the horizon at the home at `at`."""
    place = location()
    try:
        times = sun(place.observer, date=at.astimezone(home_zone()).date(), tzinfo=home_zone())
    except ValueError as exc:  # polar day or night: astral says which
        return "above" in str(exc)
    return bool(times["sunrise"] <= at <= times["sunset"])
