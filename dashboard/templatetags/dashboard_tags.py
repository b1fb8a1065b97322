"""Template filters of the dashboard."""

from __future__ import annotations

from datetime import datetime, timedelta

from django import template
from django.contrib.humanize.templatetags.humanize import naturaltime
from django.utils import dateformat, timezone
from django.utils.translation import gettext

from automations import evaluation
from automations.models import AutomationRun

register = template.Library()


@register.filter
def moment(value: str) -> datetime | None:
    """An ISO 8601 time, as the row shapes carry it, for `date` and `timesince`."""
    try:
        return datetime.fromisoformat(value)
    except (TypeError, ValueError):
        return None


@register.filter
def why_shown(value: str) -> str:
    """A condition's `why` (kept in English in runs and dry runs) in the page's language."""
    return evaluation.why_shown(str(value))


@register.filter
def run_status(value: str) -> str:
    """A run's status (`done`, `failed`...) in the page's language; an unknown one as it is."""
    try:
        return str(AutomationRun.Status(value).label)
    except ValueError:
        return value


@register.filter
def readable(value: object) -> str:
    """An audit event's before/after as a person reads it: `on: yes, total: 94.00`."""
    if isinstance(value, dict):
        return ", ".join(f"{key}: {_nested(item)}" for key, item in value.items())
    if isinstance(value, list | tuple):
        return ", ".join(_nested(item) for item in value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None or value == "":
        return "—"
    return str(value)


def _nested(value: object) -> str:
    text = readable(value)
    return f"({text})" if isinstance(value, dict | list | tuple) and value else text


@register.filter
def clock(value: datetime | None) -> str:
    """A moment as a wall clock reads it, in the home's time zone: `14:02` today, else
    `3 Nov 14:02` (`offline since 14:02`)."""
    if value is None:
        return ""
    local = timezone.localtime(value)
    same_day = local.date() == timezone.localdate()
    return dateformat.format(local, "H:i" if same_day else "j M H:i")


@register.filter
def ago(value: datetime | None) -> str:
    """A past moment relative to now: "just now" within a minute, else "2 minutes ago"."""
    if value is None:
        return ""
    if timezone.now() - value < timedelta(minutes=1):
        return gettext("just now")
    return naturaltime(value)
