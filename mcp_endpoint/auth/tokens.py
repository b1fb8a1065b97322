"""Issuing and checking access tokens.

A token reads `hh_<key id>_<secret>`. The key id finds the row; the secret is checked
against its SHA-256 in constant time. Secrets are 256-bit random, so a fast hash is the
right one (a slow password hash buys nothing against guessing 2^256 values).

Every MCP request presents its token, so each process remembers the rows it verified for
`MCP_AUTH_CACHE_SECONDS` (default 2 s) and checks the secret and the expiry against that
copy without a database trip. Revoking through `revoke_all()` (the admin's action and form,
the demo, an OAuth grant's revocation) forgets the copy at once in the process that revoked; any other
process stops accepting the token within `MCP_AUTH_CACHE_SECONDS`, which is the bound on
how long a revoked token keeps working anywhere.

A token issued by the hub's OAuth server (`mcp_endpoint.auth.oauth`) is a row like any other, with
its grant and resource set; a refresh gives its row a new secret and expiry.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from audit.services import record_event
from mcp_endpoint.auth.scopes import scopes as declared_scopes
from mcp_endpoint.engine.tools import Caller
from mcp_endpoint.models import AccessToken

PREFIX = "hh_"
LAST_USED_RESOLUTION = timedelta(minutes=1)  # do not write a row on every call


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def parse_scopes(text: str | list[str]) -> list[str]:
    """'read,control' -> ['read', 'control']; undeclared scopes are a ValueError."""
    return declared_scopes.parse(text)


def create_token(
    name: str,
    scopes: list[str],
    *,
    actor: str,
    interface: str,
    owner: User | None = None,
    expires_at: datetime | None = None,
) -> tuple[AccessToken, str]:
    """Create a token, audited as `token.create` (never its secret); returns the row and the
    secret string, which is shown once only."""
    key_id = secrets.token_hex(6)
    secret = secrets.token_urlsafe(32)
    with transaction.atomic():
        token = AccessToken.objects.create(
            name=name,
            owner=owner,
            key_id=key_id,
            secret_hash=hash_secret(secret),
            scopes=parse_scopes(scopes),
            expires_at=expires_at,
        )
        record_event(
            actor=actor,
            interface=interface,
            action="token.create",
            target=audit_target(token),
            after=token_view(token),
        )
    return token, f"{PREFIX}{key_id}_{secret}"


def _split(raw: str | None) -> tuple[str, str] | None:
    """(key id, secret) of a well-formed token string."""
    if not raw or not raw.startswith(PREFIX) or len(raw) > 200:
        return None
    key_id, _, secret = raw[len(PREFIX) :].partition("_")
    if not key_id or not secret:
        return None
    return key_id, secret


# key id -> (the row as verified, when it was read: time.monotonic())
_verified: dict[str, tuple[AccessToken, float]] = {}
_MISS = object()


def _from_cache(key_id: str, secret: str) -> AccessToken | object | None:
    """The remembered verdict, or _MISS when the database must be asked."""
    found = _verified.get(key_id)
    if found is None or time.monotonic() - found[1] > settings.MCP_AUTH_CACHE_SECONDS:
        return _MISS
    token = found[0]
    if not hmac.compare_digest(token.secret_hash, hash_secret(secret)):
        return _MISS  # wrong, or the row's secret changed since (an OAuth refresh): ask the database
    if not token.is_active:
        return None
    if token.last_used_at is None or timezone.now() - token.last_used_at > LAST_USED_RESOLUTION:
        return _MISS  # time to note the use in the database
    return token


def _verify(key_id: str, secret: str) -> AccessToken | None:
    token = AccessToken.objects.filter(key_id=key_id).first()
    if token is None:
        _verified.pop(key_id, None)
        return None
    if settings.MCP_AUTH_CACHE_SECONDS > 0:
        _verified[key_id] = (token, time.monotonic())
    if not hmac.compare_digest(token.secret_hash, hash_secret(secret)) or not token.is_active:
        return None
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
        AccessToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
    return token


def authenticate(raw: str | None) -> AccessToken | None:
    """The active token for this secret string, or None (unknown, wrong, revoked, expired)."""
    parts = _split(raw)
    if parts is None:
        return None
    found = _from_cache(*parts)
    return _verify(*parts) if found is _MISS else found  # type: ignore[return-value]


_averify = sync_to_async(_verify)


async def aauthenticate(raw: str | None) -> AccessToken | None:
    """`authenticate` for the event loop: a remembered verdict costs no database trip."""
    parts = _split(raw)
    if parts is None:
        return None
    found = _from_cache(*parts)
    return await _averify(*parts) if found is _MISS else found  # type: ignore[return-value]


def forget(key_ids: list[str] | None = None) -> None:
    """Drop remembered rows (all of them when `key_ids` is None)."""
    if key_ids is None:
        _verified.clear()
    for key_id in key_ids or ():
        _verified.pop(key_id, None)


def audit_target(token: AccessToken) -> str:
    return f"token:{token.key_id}"


def token_view(token: AccessToken) -> dict[str, Any]:
    """What the audit trail keeps of a token: never its secret, nor its hash."""
    return {
        "name": token.name,
        "scopes": list(token.scopes),
        "owner": token.owner.get_username() if token.owner else None,
        "expires_at": token.expires_at.isoformat() if token.expires_at else None,
        "revoked": token.revoked,
    }


def revoke_all(tokens: QuerySet[AccessToken], *, actor: str, interface: str) -> int:
    """Revoke every token of `tokens` not revoked yet, each audited as `token.revoke`; how many."""
    with transaction.atomic():
        rows = list(tokens.filter(revoked=False).select_for_update())
        count = AccessToken.objects.filter(pk__in=[row.pk for row in rows]).update(revoked=True)
        for row in rows:
            record_event(
                actor=actor,
                interface=interface,
                action="token.revoke",
                target=audit_target(row),
                before={"name": row.name, "scopes": list(row.scopes)},
            )
    forget([row.key_id for row in rows])
    return count


@dataclass(frozen=True)
class ListedToken:
    """A token made by a person (`create_mcp_token`, the admin, the dashboard, the demo) as the
    Access page lists it: never its secret."""

    pk: int
    name: str
    key_id: str
    owner: str | None
    scopes: list[str]
    created_at: datetime
    last_used_at: datetime | None
    expires_at: datetime | None
    expired: bool


def listed_tokens() -> list[ListedToken]:
    """Every token not revoked that no OAuth grant issued (those are listed as their apps,
    `oauth.grants.connected_apps`), newest first."""
    now = timezone.now()
    rows = AccessToken.objects.filter(revoked=False, grant=None).select_related("owner")
    return [
        ListedToken(
            pk=row.pk,
            name=row.name,
            key_id=row.key_id,
            owner=row.owner.get_username() if row.owner else None,
            scopes=list(row.scopes),
            created_at=row.created_at,
            last_used_at=row.last_used_at,
            expires_at=row.expires_at,
            expired=row.expires_at is not None and row.expires_at <= now,
        )
        for row in rows
    ]


def revoke_token(pk: int, *, actor: str, interface: str) -> AccessToken | None:
    """Revoke the token `pk` (not one an OAuth grant issued: its app is revoked instead), audited
    as `token.revoke` and refused by this process at once; the row, or None if there was no such
    live token."""
    row = AccessToken.objects.filter(pk=pk, grant=None, revoked=False).first()
    if row is None or not revoke_all(AccessToken.objects.filter(pk=pk), actor=actor, interface=interface):
        return None
    return row


def record_token_edit(token: AccessToken, before: dict[str, Any], *, actor: str, interface: str) -> None:
    """Audit an edit of `token` (the admin's form) as `token.edit`, or `token.revoke` when it
    revoked it; `before`: its `token_view` before the edit."""
    after = token_view(token)
    changed = [key for key in after if after[key] != before.get(key)]
    if not changed:
        return
    action = "token.revoke" if after["revoked"] and not before.get("revoked") else "token.edit"
    record_event(
        actor=actor,
        interface=interface,
        action=action,
        target=audit_target(token),
        before={key: before.get(key) for key in changed},
        after={key: after[key] for key in changed},
    )


def bearer_token(authorization: str | None) -> str | None:
    """The token of an `Authorization: Bearer <token>` header value."""
    if not authorization:
        return None
    scheme, _, value = authorization.strip().partition(" ")
    return value.strip() or None if scheme.lower() == "bearer" else None


def caller_for(token: AccessToken, interface: str) -> Caller:
    """The identity a network transport gives the engine: audited and rate-limited per token,
    its dangerous calls confirmed by a person."""
    return Caller(
        actor=token.name,
        interface=interface,
        scopes=frozenset(token.scopes),
        audited=True,
        rate_key=token.key_id,
        confirms=True,
    )
