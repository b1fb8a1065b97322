"""Template filters of the dashboard."""

from __future__ import annotations

from django import template

register = template.Library()


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
