"""Streamable HTTP sessions, kept in the database so that any hub process can serve them."""

from __future__ import annotations

import dataclasses
import secrets
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from mcp_endpoint.models import AccessToken, McpSession
from mcp_endpoint.session import SessionState

TOUCH_RESOLUTION = timedelta(seconds=30)


def new_session_id() -> str:
    """Cryptographically random, visible ASCII only (as the transport requires)."""
    return secrets.token_urlsafe(32)


def create(token: AccessToken, state: SessionState) -> str:
    session_id = new_session_id()
    McpSession.objects.create(session_id=session_id, token=token, state=dataclasses.asdict(state))
    return session_id


def load(session_id: str, token: AccessToken) -> SessionState | None:
    """The live session's state, or None when unknown, ended, expired or not this token's."""
    row = McpSession.objects.filter(session_id=session_id, token=token, ended=False).first()
    if row is None:
        return None
    now = timezone.now()
    if now - row.last_active > timedelta(seconds=settings.MCP_SESSION_IDLE_SECONDS):
        McpSession.objects.filter(pk=row.pk).update(ended=True)
        return None
    if now - row.last_active > TOUCH_RESOLUTION:
        McpSession.objects.filter(pk=row.pk).update(last_active=now)
    known = {f.name for f in dataclasses.fields(SessionState)}
    return SessionState(**{k: v for k, v in row.state.items() if k in known})


def save(session_id: str, state: SessionState) -> None:
    McpSession.objects.filter(session_id=session_id).update(
        state=dataclasses.asdict(state), last_active=timezone.now()
    )


def end(session_id: str, token: AccessToken) -> bool:
    return bool(McpSession.objects.filter(session_id=session_id, token=token, ended=False).update(ended=True))
