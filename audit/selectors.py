"""Reads of the audit trail (dashboard's Activity page, REST API)."""

from __future__ import annotations

from collections.abc import Sequence

from django.db.models import Q, QuerySet

from audit.models import Event

# A file recorded as part of a batch: its batch's one summary event (`fel.batch`) stands for it
# where the home's activity is read, unless this action is asked for by name.
BATCH_FILE = "fel.batch.file"


def events(
    *,
    interface: str = "",
    actor: str = "",
    target: str = "",
    action: str = "",
    targets: Sequence[str] = (),
    batch_files: bool = True,
) -> QuerySet[Event]:
    """Audit events, newest first; `actor` and `target` match case-insensitive substrings, and
    `target` also any of `targets` (the targets a name stands for, e.g. "light:salon" for
    "Salón"). Without `batch_files`, a batch's per-file events show only when their action is
    asked for (the batch's summary event stands for them)."""
    found = Event.objects.all()
    if interface:
        found = found.filter(interface=interface)
    if actor:
        found = found.filter(actor__icontains=actor)
    if target or targets:
        named = Q(target__in=list(targets))
        found = found.filter(named | Q(target__icontains=target) if target else named)
    if action:
        found = found.filter(action=action)
    elif not batch_files:
        found = found.exclude(action=BATCH_FILE)
    return found.order_by("-at", "-id")


def event_actions(limit: int = 100) -> list[str]:
    """The actions the audit trail holds (light.set, alarm.set...), for a filter's choices."""
    return list(Event.objects.order_by("action").values_list("action", flat=True).distinct()[:limit])


def event_actors(limit: int = 50) -> list[str]:
    return list(
        Event.objects.exclude(actor="").order_by("actor").values_list("actor", flat=True).distinct()[:limit]
    )
