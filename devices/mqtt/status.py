"""What each MQTT worker reports about itself, for the dashboard and health checks in any
process: written every few seconds by the worker, read by anyone."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, TypedDict

from django.utils import timezone

from devices.mqtt.models import MqttWorker

REPORT_SECONDS = 5.0
STALE_AFTER = timedelta(minutes=1)  # no report for this long: the worker is not running


BAD_STATES = frozenset({"refused", "silent"})


def report(
    *,
    client_id: str,
    broker: str,
    connected: bool,
    since: datetime | None,
    counters: dict[str, int],
    subscriptions: list[dict[str, str]],
    adopted: list[str],
) -> None:
    MqttWorker.objects.update_or_create(
        client_id=client_id,
        defaults={
            "broker": broker,
            "connected": connected,
            "since": since,
            "reported_at": timezone.now(),
            "counters": counters,
            "subscriptions": subscriptions,
            "adopted": adopted,
        },
    )


def subscribed_before(client_id: str) -> list[str]:
    """The topic filters this worker's previous run subscribed (its session may keep them)."""
    row = MqttWorker.objects.filter(client_id=client_id).values_list("subscriptions", flat=True).first()
    return [s["topic"] for s in row or [] if isinstance(s, dict) and "topic" in s]


class WorkerReport(TypedDict):
    """A worker's last report, as the dashboard, `/healthz` and `/metrics` read it."""

    client_id: str
    broker: str
    connected: bool  # linked to the broker, and running
    since: datetime | None
    reported_at: datetime
    counters: dict[str, int]
    subscriptions: list[dict[str, str]]  # {"topic", "state", "reason"}
    adopted: list[str]
    running: bool  # reported within STALE_AFTER
    failing: list[dict[str, str]]  # the subscriptions refused or silent


def workers() -> list[WorkerReport]:
    """Every worker that reported lately, with `running` false for those gone quiet and for
    those the broker announced gone: a running worker that reported after them holds their
    session (it adopted them on their last will, seconds after a kill, where silence alone
    would take STALE_AFTER)."""
    now = timezone.now()
    rows = list(
        MqttWorker.objects.values(
            "client_id", "broker", "connected", "since", "reported_at", "counters", "subscriptions", "adopted"
        )
    )
    adopted_at: dict[str, datetime] = {}
    for row in rows:
        if now - row["reported_at"] < STALE_AFTER:
            for stopped in row["adopted"]:
                adopted_at[stopped] = max(row["reported_at"], adopted_at.get(stopped, row["reported_at"]))
    reports: list[WorkerReport] = []
    for row in rows:
        taken_over = row["client_id"] in adopted_at and adopted_at[row["client_id"]] > row["reported_at"]
        running = now - row["reported_at"] < STALE_AFTER and not taken_over
        reports.append(
            {
                **row,
                "connected": row["connected"] and running,
                "running": running,
                "failing": [s for s in row["subscriptions"] if s.get("state") in BAD_STATES],
            }
        )
    return reports


def failing_subscriptions(rows: list[WorkerReport] | None = None) -> list[dict[str, str]]:
    """The refused or silent subscriptions of the connected workers, each with its worker."""
    return [
        {"worker": row["client_id"], **sub}
        for row in (workers() if rows is None else rows)
        if row["connected"]
        for sub in row["failing"]
    ]


def broker_state(rows: list[WorkerReport] | None = None) -> str:
    """`connected` if a running worker holds a link to the broker, `disconnected` if the
    running workers have none (they keep retrying), `no worker` if none is running."""
    running = [w for w in (workers() if rows is None else rows) if w["running"]]
    if not running:
        return "no worker"
    return "connected" if any(w["connected"] for w in running) else "disconnected"


def health(client_id: str | None = None) -> dict[str, Any]:
    """Is MQTT working: a running worker (`client_id`, or any) linked to the broker, and no
    subscription of a linked worker refused or silent. Names only states, never reasons (they
    may name the broker user): the worker's log has those."""
    every = workers()
    rows = [w for w in every if client_id is None or w["client_id"] == client_id]
    state = broker_state(rows)
    failing = [{k: sub[k] for k in ("worker", "topic", "state")} for sub in failing_subscriptions(rows)]
    result: dict[str, Any] = {"ok": state == "connected" and not failing, "state": state}
    if failing:
        result["subscriptions"] = failing
    adopted = {w["client_id"]: w["adopted"] for w in rows if w["running"] and w["adopted"]}
    if adopted:
        result["adopted"] = adopted  # stopped workers whose sessions live ones stand in for
    if client_id is not None and state == "no worker":
        adopters = [w["client_id"] for w in every if w["running"] and client_id in w["adopted"]]
        if adopters:
            result["adopted_by"] = adopters[0]  # the broker said its last will; this one took over
    return result
