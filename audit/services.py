"""Writes of the audit trail: every change in the hub is one `Event`, written by the service
that makes the change, in the change's own transaction."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import Model
from django.utils import timezone

from audit.changes import announce_change
from audit.models import Event
from common.pruning import delete_in_chunks


def record_event(
    *,
    actor: str,
    interface: str,
    action: str,
    target: str,
    before: Any = None,
    after: Any = None,
    broadcast: dict[str, Any] | None = None,
) -> Event:
    """Write one audit event (in the caller's transaction, if any); with `broadcast`, also
    announce the change to every process once it commits (`audit.changes`)."""
    event = Event.objects.create(
        actor=actor[:150], interface=interface, action=action, target=target, before=before, after=after
    )
    if broadcast is not None:
        announce_change(
            {
                "action": action,
                "target": target,
                "actor": event.actor,
                "interface": interface,
                "at": event.at.isoformat(),
                **broadcast,
            }
        )
    return event


def prune_events(older_than: timedelta) -> int:
    """Delete audit events older than `older_than`, in short transactions; how many."""
    return delete_in_chunks(Event.objects.filter(at__lt=timezone.now() - older_than))


# How an app names a row in the audit trail and announces its change: (target, broadcast).
AuditTarget = Callable[[Any], tuple[str, dict[str, Any]]]


def save_row(
    row: Model,
    *,
    target: AuditTarget,
    fields: Iterable[str],
    initial: dict[str, Any],
    created: bool,
    actor: str,
) -> None:
    """Save a row as the admin's form left it, audited as `<model>.create` or `<model>.edit`
    with the `fields` the form changed (`initial`: the form's values before)."""
    fields = list(fields)
    with transaction.atomic():
        row.save()
        name, broadcast = target(row)
        record_event(
            actor=actor,
            interface=Event.Interface.ADMIN,
            action=f"{row._meta.model_name}.{'create' if created else 'edit'}",
            target=name,
            before=None if created else {field: initial.get(field) for field in fields},
            after={field: row.serializable_value(field) for field in fields},  # a foreign key: its id
            broadcast=broadcast,
        )


def delete_rows(rows: Iterable[Model], *, target: AuditTarget, actor: str) -> int:
    """Delete rows, each audited as `<model>.delete`."""
    deleted = 0
    with transaction.atomic():
        for row in rows:
            name, broadcast = target(row)
            row.delete()
            record_event(
                actor=actor,
                interface=Event.Interface.ADMIN,
                action=f"{row._meta.model_name}.delete",
                target=name,
                broadcast=broadcast,
            )
            deleted += 1
    return deleted
