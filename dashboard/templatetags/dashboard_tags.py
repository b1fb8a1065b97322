"""Template filters of the dashboard."""

from __future__ import annotations

from datetime import datetime

from django import template

register = template.Library()


@register.filter
def moment(value: str) -> datetime | None:
    """An ISO 8601 time, as the row shapes carry it, for `date` and `timesince`."""
    try:
        return datetime.fromisoformat(value)
    except (TypeError, ValueError):
        return None


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
