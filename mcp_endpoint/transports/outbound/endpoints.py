"""Outbound MCP endpoints: the writes and reads of their rows (`OutboundEndpoint`).

An endpoint is saved with `save_endpoint` (the `add_mcp_endpoint` command, the admin). A serving
process (`supervisor`) reads the enabled ones with `enabled_endpoints`, holds each it connects
with a lease (`claim`, renewed every round, `release` when it lets go) and records the
connection's status; the dashboard and `/metrics` read `statuses`.

The lease is one conditional UPDATE: it succeeds when the row is free, lapsed or already this
process's, which both SQLite (writes are serialized) and PostgreSQL (a concurrent UPDATE of
the row waits, then checks the condition against the row as committed) give to one process
only. A process that dies keeps its claim until `held_until`: another takes the endpoint over
then.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, TypedDict

from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from audit.services import record_event
from mcp_endpoint.auth.scopes import scopes as declared_scopes
from mcp_endpoint.engine.registry import registry
from mcp_endpoint.engine.tools import TOOL_NAME_RE, Caller
from mcp_endpoint.models import OutboundEndpoint
from mcp_endpoint.transports.outbound.endpoint_urls import mask_url, validate_endpoint_url

INTERFACE = "mcp-endpoint"  # the door of the audit trail and the metrics
MAX_ERROR_CHARS = 500


@dataclass(frozen=True)
class EndpointConfig:
    """What a connection to an endpoint is made from; a change to any of it makes a new one."""

    pk: int
    name: str
    url: str = field(repr=False)  # holds the secret
    scopes: tuple[str, ...]
    tools: tuple[str, ...]

    @property
    def masked_url(self) -> str:
        return mask_url(self.url)

    def caller(self) -> Caller:
        """Its calls are audited with its name, limited to its tools and scopes, rate-limited as one."""
        return Caller(
            actor=self.name,
            interface=INTERFACE,
            scopes=frozenset(self.scopes),
            audited=True,
            rate_key=f"endpoint:{self.pk}",
            tools=frozenset(self.tools),
            confirms=True,
        )


def parse_tools(text: str | list[str]) -> list[str]:
    """'a,b' (or one per line) -> ['a', 'b'], each once, in order; a name no tool could have is a
    ValueError."""
    items = text.replace("\n", ",").split(",") if isinstance(text, str) else text
    names = list(dict.fromkeys(item.strip() for item in items if item.strip()))
    bad = [name for name in names if not TOOL_NAME_RE.match(name)]
    if bad:
        raise ValueError(f"not a tool name: {', '.join(bad)} (1-64 characters of A-Z a-z 0-9 _ . -)")
    return names


def tools_not_served(tools: list[str], scopes: list[str]) -> tuple[list[str], list[str]]:
    """Of `tools`: the names no tool has now (a device's tools appear when it connects), and
    those whose scope is not among `scopes` (the endpoint would not see them)."""
    missing, out_of_scope = [], []
    for name in tools:
        tool = registry.get(name)
        if tool is None:
            missing.append(name)
        elif tool.scope not in scopes:
            out_of_scope.append(name)
    return missing, out_of_scope


def endpoint_view(row: OutboundEndpoint) -> dict[str, Any]:
    """What the audit trail keeps of an endpoint: its URL masked (it holds the secret)."""
    return {
        "name": row.name,
        "url": mask_url(row.url) if row.url else "",
        "scopes": list(row.scopes),
        "tools": list(row.tools),
        "enabled": row.enabled,
    }


def record_change(row: OutboundEndpoint, old: OutboundEndpoint | None, *, actor: str, interface: str) -> None:
    """Audit an endpoint added (`old` None: `endpoint.create`) or changed (`endpoint.edit`, with
    the settings that changed, `old` being the row as it was; a new secret in the same masked URL
    shows as `url_changed`, never the URL)."""
    after = endpoint_view(row)
    if old is None:
        record_event(
            actor=actor, interface=interface, action="endpoint.create", target=_target(row), after=after
        )
        return
    before = endpoint_view(old)
    changed = [key for key in after if after[key] != before[key]]
    new_secret = {"url_changed": True} if old.url != row.url else {}
    if not changed and not new_secret:
        return
    record_event(
        actor=actor,
        interface=interface,
        action="endpoint.edit",
        target=_target(row),
        before={key: before[key] for key in changed},
        after={key: after[key] for key in changed} | new_secret,
    )


def delete_endpoints(rows: Iterable[OutboundEndpoint], *, actor: str, interface: str) -> int:
    """Delete endpoints, each audited as `endpoint.delete`; how many."""
    deleted = 0
    with transaction.atomic():
        for row in rows:
            view, target = endpoint_view(row), _target(row)
            row.delete()
            record_event(
                actor=actor, interface=interface, action="endpoint.delete", target=target, before=view
            )
            deleted += 1
    return deleted


def _target(row: OutboundEndpoint) -> str:
    return f"endpoint:{row.name}"[:200]


def save_endpoint(
    name: str,
    url: str,
    *,
    scopes: str | list[str],
    tools: str | list[str],
    actor: str,
    interface: str,
    enabled: bool = True,
) -> tuple[OutboundEndpoint, bool]:
    """Add the endpoint `name`, or change it if it exists, audited; (its row, whether it is new).
    Raises ValueError (or Django's ValidationError for the URL, whose messages never quote it)."""
    name = name.strip()
    if not name or len(name) > 100:
        raise ValueError("the endpoint's name must be 1-100 characters")
    validate_endpoint_url(url)
    granted = declared_scopes.parse(scopes)
    if not granted:
        raise ValueError("give the endpoint at least one scope")
    chosen = parse_tools(tools)
    with transaction.atomic():
        old = OutboundEndpoint.objects.select_for_update().filter(name=name).first()
        row, created = OutboundEndpoint.objects.update_or_create(
            name=name, defaults={"url": url, "scopes": granted, "tools": chosen, "enabled": enabled}
        )
        record_change(row, old, actor=actor, interface=interface)
    return row, created


def enabled_endpoints() -> list[EndpointConfig]:
    return [
        EndpointConfig(row.pk, row.name, row.url, tuple(row.scopes), tuple(row.tools))
        for row in OutboundEndpoint.objects.filter(enabled=True).only("name", "url", "scopes", "tools")
    ]


def claim(pk: int, holder: str, lease: timedelta) -> bool:
    """Take or renew `holder`'s lease on an enabled endpoint; False when another process holds
    it (or it is gone or disabled)."""
    now = timezone.now()
    free = Q(holder=holder) | Q(holder="") | Q(held_until__isnull=True) | Q(held_until__lt=now)
    updated = OutboundEndpoint.objects.filter(free, pk=pk, enabled=True).update(
        holder=holder, held_until=now + lease
    )
    return updated == 1


CallCounts = dict[int, tuple[int, datetime]]  # endpoint pk -> (calls served, when the last was)


def add_calls(counts: CallCounts) -> None:
    """Count the calls served since the last round into the endpoints' rows."""
    for pk, (calls, last_call_at) in counts.items():
        OutboundEndpoint.objects.filter(pk=pk).update(calls=F("calls") + calls, last_call_at=last_call_at)


def release(holder: str, pks: list[int] | None = None) -> None:
    """`holder` lets go of its endpoints (those of `pks`), which it no longer serves."""
    rows = OutboundEndpoint.objects.filter(holder=holder)
    if pks is not None:
        rows = rows.filter(pk__in=pks)
    rows.update(holder="", held_until=None, connected=False)


def record_connected(pk: int, holder: str) -> None:
    OutboundEndpoint.objects.filter(pk=pk, holder=holder).update(
        connected=True, connected_since=timezone.now(), last_error=""
    )


def record_disconnected(pk: int, holder: str, error: str) -> None:
    """`error`: already redacted (`endpoint_urls.redact`)."""
    OutboundEndpoint.objects.filter(pk=pk, holder=holder).update(
        connected=False, last_error=error[:MAX_ERROR_CHARS]
    )


class EndpointStatus(TypedDict):
    """An endpoint as the dashboard and `/metrics` show it (the URL masked)."""

    name: str
    url: str
    enabled: bool
    connected: bool
    connected_since: datetime | None
    last_error: str
    calls: int
    last_call_at: datetime | None
    tools: list[str]
    scopes: list[str]


def statuses() -> list[EndpointStatus]:
    return [
        {
            "name": row.name,
            "url": mask_url(row.url),
            "enabled": row.enabled,
            "connected": row.is_connected,
            "connected_since": row.connected_since if row.is_connected else None,
            "last_error": row.last_error,
            "calls": row.calls,
            "last_call_at": row.last_call_at,
            "tools": list(row.tools),
            "scopes": list(row.scopes),
        }
        for row in OutboundEndpoint.objects.all()
    ]
