"""The engine's writes: its lease, its hold on the automations, their persisted state, and runs.

A lease per holder: each engine (an `EngineHolder` row, named by `common.holders.process_name`) renews its
own row once per round, whatever the number of automations it holds; an automation's row
names its holder (`Automation.holder`) and is taken by another engine only when that holder's
lease lapsed (or it names none). Claiming is one conditional UPDATE of the enabled rows whose
holder is "" or not among the live holders, so a round writes only the rows that change hands
(a lease per automation rewrote every held row every round). Every write of a held
automation's state, and every run started, is fenced: it happens only while the row still
names this holder and this holder's lease is live, in the statement that writes the row, so
that a process that lost its lease (stopped for too long) can neither run an automation
another process now holds nor move its schedule marks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from automations.models import Automation, AutomationRun, EngineHolder
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


def _live(now: datetime) -> Any:
    """The names of the holders whose lease is live at `now`."""
    return EngineHolder.objects.filter(held_until__gte=now).values("name")


def claim_round(holder: str, lease: timedelta, known: Mapping[int, Held] | None = None) -> list[Held]:
    """Renew `holder`'s lease (one row); take every enabled automation free or whose holder's
    lease lapsed; let go of those disabled; answer every automation it now holds. `known`:
    those the caller already has loaded, by pk: their definitions are not read again while
    their version is the same (a round every few seconds decoded hundreds of them, holding the
    database's thread, shared with the requests, for tens of milliseconds)."""
    known = known or {}
    now = timezone.now()
    fields = ("pk", "name", "version", "definition", "state", "enabled_by_id")
    with transaction.atomic():
        renewed = EngineHolder.objects.filter(name=holder).update(held_until=now + lease, renewed_at=now)
        if not renewed:
            EngineHolder.objects.create(name=holder, held_until=now + lease, renewed_at=now)
        EngineHolder.objects.filter(held_until__lt=now).delete()  # lapsed: as good as gone
        free = Q(holder="") | ~Q(holder__in=_live(now))
        Automation.objects.filter(free, enabled=True).update(holder=holder)
        Automation.objects.filter(holder=holder, enabled=False).update(holder="")
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
    """`holder` ends its lease and lets go of every automation it holds (another process takes
    them at its next round)."""
    with transaction.atomic():
        EngineHolder.objects.filter(name=holder).delete()
        Automation.objects.filter(holder=holder).update(holder="")


def _fenced(pk: int, holder: str) -> Any:
    """The automation's row while `holder` holds it and its lease is live."""
    live = _live(timezone.now()).filter(name=holder)
    return Automation.objects.filter(pk=pk, holder=holder, holder__in=live)


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
