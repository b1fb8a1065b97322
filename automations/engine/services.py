"""The engine's writes: its leases on the automations, their persisted state, and runs.

A lease is the outbound endpoints' claim (`mcp_endpoint.transports.outbound.endpoints.claim`)
taken in bulk: one conditional UPDATE per round takes every enabled automation that is free,
lapsed or already this holder's. Every write of a held automation's state, and every run
started, is fenced by the lease: it happens only while the row still names this holder, in
the transaction that writes the row, so that a process that lost its lease (stopped for too
long) can neither run an automation another process now holds nor move its schedule marks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from automations.models import Automation, AutomationRun
from common.pruning import delete_in_chunks


@dataclass(frozen=True)
class Held:
    """An automation this process holds, as its row says now."""

    pk: int
    name: str
    version: int
    definition: dict[str, Any]
    state: dict[str, Any]
    enabled_by: int | None


def claim_round(holder: str, lease: timedelta, known: Mapping[int, Held] | None = None) -> list[Held]:
    """Take or renew `holder`'s lease on every enabled automation free, lapsed or its own; let
    go of those disabled; answer every automation it now holds. `known`: those the caller
    already has loaded, by pk: their definitions are not read again while their version is
    the same (a round every few seconds decoded hundreds of them, holding the database's
    thread, shared with the requests, for tens of milliseconds)."""
    known = known or {}
    now = timezone.now()
    free = Q(holder=holder) | Q(holder="") | Q(held_until__isnull=True) | Q(held_until__lt=now)
    fields = ("pk", "name", "version", "definition", "state", "enabled_by_id")
    with transaction.atomic():
        Automation.objects.filter(free, enabled=True).update(holder=holder, held_until=now + lease)
        Automation.objects.filter(holder=holder, enabled=False).update(holder="", held_until=None)
        rows = Automation.objects.filter(holder=holder, enabled=True).values_list(
            "pk", "name", "version", "enabled_by_id"
        )
        same = {
            pk: (name, by) for pk, name, version, by in rows if pk in known and known[pk].version == version
        }
        read = Automation.objects.filter(holder=holder, enabled=True).exclude(pk__in=list(same))
        held = [Held(*row) for row in read.values_list(*fields)]
    return held + [replace(known[pk], name=name, enabled_by=by) for pk, (name, by) in same.items()]


def release(holder: str) -> None:
    """`holder` lets go of every automation it holds (another process takes them at once)."""
    Automation.objects.filter(holder=holder).update(holder="", held_until=None)


def _fenced(pk: int, holder: str) -> Any:
    return Automation.objects.filter(pk=pk, holder=holder, held_until__gte=timezone.now())


def save_state(pk: int, holder: str, state: dict[str, Any]) -> bool:
    """Write the engine's state of a held automation; False when `holder` no longer holds it."""
    return _fenced(pk, holder).update(state=state) == 1


def save_states(holder: str, states: dict[int, dict[str, Any]]) -> int:
    """`save_state` for many held automations in one transaction, so that a lease round taking
    hundreds at once commits once rather than once each (which held the database's thread,
    shared with the requests, for tenths of a second); how many `holder` still held."""
    with transaction.atomic():
        return sum(_fenced(pk, holder).update(state=state) for pk, state in states.items())


def start_run(
    held: Held,
    holder: str,
    *,
    at: datetime,
    trigger: dict[str, Any],
    depth: int,
    status: str = AutomationRun.Status.RUNNING,
    trace: list[dict[str, Any]] | None = None,
    state: dict[str, Any] | None = None,
) -> int | None:
    """Record a run of a held automation (with `state`, the schedule marks it moves, in the
    same transaction); None, and nothing written, when `holder` no longer holds it. A run
    recorded with a final status (stopped, missed) is finished at once."""
    with transaction.atomic():
        fenced = _fenced(held.pk, holder)
        if not (fenced.update(state=state) if state is not None else fenced.exists()):
            return None
        run = AutomationRun.objects.create(
            automation_id=held.pk,
            version=held.version,
            started_at=at,
            finished_at=None if status == AutomationRun.Status.RUNNING else timezone.now(),
            status=status,
            trigger=trigger,
            trace=trace or [],
            depth=depth,
            holder=holder,
        )
    return run.pk


def finish_run(run_id: int, status: str, trace: list[dict[str, Any]]) -> None:
    AutomationRun.objects.filter(pk=run_id).update(status=status, trace=trace, finished_at=timezone.now())


def end_orphan_runs(pks: list[int], holder: str) -> int:
    """Runs of these automations left `running` by a holder other than `holder` (a process that
    died in the middle of one) end as stopped, saying so."""
    orphans = AutomationRun.objects.filter(
        automation_id__in=pks, status=AutomationRun.Status.RUNNING
    ).exclude(holder=holder)
    ended = 0
    for run in orphans:
        run.trace = [*run.trace, {"stopped": f"its process ({run.holder}) ended before it finished"}]
        run.status, run.finished_at = AutomationRun.Status.STOPPED, timezone.now()
        run.save(update_fields=["trace", "status", "finished_at"])
        ended += 1
    return ended


def prune_runs(older_than: timedelta, keep: int) -> int:
    """Delete runs older than `older_than`, and beyond the newest `keep` of each automation, in
    short transactions; how many."""
    deleted = delete_in_chunks(AutomationRun.objects.filter(started_at__lt=timezone.now() - older_than))
    for pk in Automation.objects.values_list("pk", flat=True):
        newest = AutomationRun.objects.filter(automation_id=pk).order_by("-started_at", "-id")
        boundary = next(iter(newest.values_list("started_at", flat=True)[keep : keep + 1]), None)
        if boundary is not None:
            kept = list(newest.values_list("pk", flat=True)[:keep])
            deleted += delete_in_chunks(
                AutomationRun.objects.filter(automation_id=pk, started_at__lte=boundary).exclude(pk__in=kept)
            )
    return deleted
