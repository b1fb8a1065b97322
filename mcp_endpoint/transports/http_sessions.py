"""Streamable HTTP sessions, kept in the database so that any hub process can serve them.

Each process also remembers the sessions it looked up or saved for
`MCP_AUTH_CACHE_SECONDS`, so that a session's requests do not each read its row. A session
ended (DELETE) through this process is forgotten at once; one ended through another process
is refused here within `MCP_AUTH_CACHE_SECONDS`. State saved here (after `logging/setLevel`,
`resources/subscribe`...) is what this process serves next; a change saved by another
process is seen here within the same bound (the GET stream reads subscriptions afresh).
"""

from __future__ import annotations

import dataclasses
import secrets
import time
from datetime import datetime, timedelta
from typing import Any, Literal

from django.conf import settings
from django.utils import timezone

from mcp_endpoint.engine.protocol import SessionState
from mcp_endpoint.models import AccessToken, McpSession

TOUCH_RESOLUTION = timedelta(seconds=30)


@dataclasses.dataclass
class _Known:
    token_id: int
    state: SessionState
    last_active: datetime
    read_at: float  # time.monotonic()


_known: dict[str, _Known] = {}


def new_session_id() -> str:
    """Cryptographically random, visible ASCII only (as the transport requires)."""
    return secrets.token_urlsafe(32)


def _copy(state: SessionState) -> SessionState:
    return dataclasses.replace(
        state,
        client_info=dict(state.client_info),
        client_capabilities=dict(state.client_capabilities),
        subscriptions=list(state.subscriptions),
    )


PRUNE_ABOVE = 1000  # remembered sessions; past it, the ones too old to trust are dropped


def _remember(session_id: str, token_id: int, state: SessionState, last_active: datetime) -> None:
    if settings.MCP_AUTH_CACHE_SECONDS <= 0:
        return
    now = time.monotonic()
    if len(_known) >= PRUNE_ABOVE:  # sessions abandoned without a DELETE
        for old, known in list(_known.items()):  # one step under the GIL: the loop may pop meanwhile
            if now - known.read_at > settings.MCP_AUTH_CACHE_SECONDS:
                _known.pop(old, None)
    _known[session_id] = _Known(token_id, _copy(state), last_active, now)


def _make_room(token: AccessToken) -> None:
    """At most MCP_MAX_SESSIONS_PER_TOKEN live sessions per token: before a new one, end the
    least recently used beyond the limit (clients seldom DELETE theirs; the one ended gets
    404 and initializes again). Other processes notice within MCP_AUTH_CACHE_SECONDS."""
    limit = settings.MCP_MAX_SESSIONS_PER_TOKEN
    if limit <= 0:
        return
    live = McpSession.objects.filter(token=token, ended=False).order_by("-last_active", "-pk")
    surplus = list(live.values_list("pk", "session_id")[limit - 1 :])
    if surplus:
        McpSession.objects.filter(pk__in=[pk for pk, _ in surplus]).update(ended=True)
        for _, session_id in surplus:
            _known.pop(session_id, None)


def create(token: AccessToken, state: SessionState) -> str:
    _make_room(token)
    session_id = new_session_id()
    row = McpSession.objects.create(session_id=session_id, token=token, state=dataclasses.asdict(state))
    _remember(session_id, token.pk, state, row.last_active)
    return session_id


def remembered(session_id: str, token: AccessToken) -> SessionState | Literal[False] | None:
    """The session's state as this process last saw it; None when that settles it is not
    this token's; False when the database must be asked (unknown here, read too long ago,
    or due to be marked active)."""
    known = _known.get(session_id)
    if known is None or time.monotonic() - known.read_at > settings.MCP_AUTH_CACHE_SECONDS:
        return False
    if known.token_id != token.pk:
        return None  # a session belongs to the token that created it, for good
    if timezone.now() - known.last_active > TOUCH_RESOLUTION:
        return False
    return _copy(known.state)


def load(session_id: str, token: AccessToken) -> SessionState | None:
    """The live session's state, or None when unknown, ended, expired or not this token's."""
    row = McpSession.objects.filter(session_id=session_id, token=token, ended=False).first()
    if row is None:
        _known.pop(session_id, None)
        return None
    now = timezone.now()
    if now - row.last_active > timedelta(seconds=settings.MCP_SESSION_IDLE_SECONDS):
        McpSession.objects.filter(pk=row.pk).update(ended=True)
        _known.pop(session_id, None)
        return None
    if now - row.last_active > TOUCH_RESOLUTION:
        McpSession.objects.filter(pk=row.pk).update(last_active=now)
        row.last_active = now
    known = {f.name for f in dataclasses.fields(SessionState)}
    state = SessionState(**{k: v for k, v in row.state.items() if k in known})
    _remember(session_id, token.pk, state, row.last_active)
    return state


def save(session_id: str, state: SessionState) -> None:
    now = timezone.now()
    McpSession.objects.filter(session_id=session_id).update(state=dataclasses.asdict(state), last_active=now)
    known = _known.get(session_id)
    if known is not None:  # still trusted only as long as the row read last said so
        known.state, known.last_active = _copy(state), now


def end(session_id: str, token: AccessToken) -> bool:
    _known.pop(session_id, None)
    return bool(McpSession.objects.filter(session_id=session_id, token=token, ended=False).update(ended=True))


def count_open() -> int:
    """Sessions not ended and used within MCP_SESSION_IDLE_SECONDS, whichever process serves
    them: one range of the `mcp_session_activity` index, however many old rows there are."""
    since = timezone.now() - timedelta(seconds=settings.MCP_SESSION_IDLE_SECONDS)
    return McpSession.objects.filter(ended=False, last_active__gte=since).count()


PURGE_BATCH = 1000  # rows per DELETE: short transactions, bounded memory


def purge(grace: timedelta) -> int:
    """Delete the sessions over (ended or expired) for longer than `grace`, in batches;
    returns how many. A session is over MCP_SESSION_IDLE_SECONDS after its last use at the
    latest (DELETE or a newer session may end it sooner, but no row says when), so only
    rows unused for that long plus `grace` go: open ones never. A client that comes back
    with a purged id gets the same 404 as for an ended one."""
    cutoff = timezone.now() - timedelta(seconds=settings.MCP_SESSION_IDLE_SECONDS) - grace
    total = 0
    while True:
        ids = list(
            McpSession.objects.filter(last_active__lt=cutoff)
            .order_by("last_active")  # along the index, past the rows deleted already
            .values_list("pk", flat=True)[:PURGE_BATCH]
        )
        if not ids:
            return total
        deleted, _ = McpSession.objects.filter(pk__in=ids, last_active__lt=cutoff).delete()
        total += deleted


# initialized, protocol_version, log_level, subscriptions, client_info, client_capabilities
Fingerprint = tuple[bool, str | None, str | None, tuple[str, ...], dict[str, Any], dict[str, Any]]


def fingerprint(state: SessionState) -> Fingerprint:
    """What a request may change in a session's state, cheaply comparable (no deep copy)."""
    return (
        state.initialized,
        state.protocol_version,
        state.log_level,
        tuple(state.subscriptions),
        dict(state.client_info),
        dict(state.client_capabilities),
    )
