"""Reads of the audit trail (dashboard's Activity page, REST API)."""

from __future__ import annotations

from django.db.models import QuerySet

from audit.models import Event


def events(*, interface: str = "", actor: str = "", target: str = "", action: str = "") -> QuerySet[Event]:
    """Audit events, newest first; `actor` and `target` match case-insensitive substrings."""
    found = Event.objects.all()
    if interface:
        found = found.filter(interface=interface)
    if actor:
        found = found.filter(actor__icontains=actor)
    if target:
        found = found.filter(target__icontains=target)
    if action:
        found = found.filter(action=action)
    return found.order_by("-at", "-id")


def event_actions(limit: int = 100) -> list[str]:
    """The actions the audit trail holds (light.set, alarm.set...), for a filter's choices."""
    return list(Event.objects.order_by("action").values_list("action", flat=True).distinct()[:limit])


def event_actors(limit: int = 50) -> list[str]:
    return list(
        Event.objects.exclude(actor="").order_by("actor").values_list("actor", flat=True).distinct()[:limit]
    )
