"""Issuing and checking access tokens.

A token reads `hh_<key id>_<secret>`. The key id finds the row; the secret is checked
against its SHA-256 in constant time. Secrets are 256-bit random, so a fast hash is the
right one (a slow password hash buys nothing against guessing 2^256 values).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import datetime, timedelta

from asgiref.sync import sync_to_async
from django.utils import timezone

from mcp_endpoint.models import AccessToken
from mcp_endpoint.registry import SCOPES, Caller

PREFIX = "hh_"
LAST_USED_RESOLUTION = timedelta(minutes=1)  # do not write a row on every call


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def parse_scopes(text: str | list[str]) -> list[str]:
    """'read,control' -> ['read', 'control']; unknown scopes are a ValueError."""
    items = text.split(",") if isinstance(text, str) else text
    scopes = [s.strip() for s in items if s.strip()]
    unknown = sorted(set(scopes) - set(SCOPES))
    if unknown:
        raise ValueError(f"unknown scope(s): {', '.join(unknown)} (known: {', '.join(SCOPES)})")
    return [s for s in SCOPES if s in scopes]


def create_token(
    name: str, scopes: list[str], *, owner=None, expires_at: datetime | None = None
) -> tuple[AccessToken, str]:
    """Create a token; returns the row and the secret string, which is shown once only."""
    key_id = secrets.token_hex(6)
    secret = secrets.token_urlsafe(32)
    token = AccessToken.objects.create(
        name=name,
        owner=owner,
        key_id=key_id,
        secret_hash=_hash(secret),
        scopes=parse_scopes(scopes),
        expires_at=expires_at,
    )
    return token, f"{PREFIX}{key_id}_{secret}"


def authenticate(raw: str | None) -> AccessToken | None:
    """The active token for this secret string, or None (unknown, wrong, revoked, expired)."""
    if not raw or not raw.startswith(PREFIX):
        return None
    key_id, _, secret = raw[len(PREFIX) :].partition("_")
    if not key_id or not secret or len(raw) > 200:
        return None
    token = AccessToken.objects.filter(key_id=key_id).first()
    if token is None or not hmac.compare_digest(token.secret_hash, _hash(secret)):
        return None
    if not token.is_active:
        return None
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
        AccessToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return token


def revoke(token: AccessToken) -> None:
    AccessToken.objects.filter(pk=token.pk).update(revoked=True)


aauthenticate = sync_to_async(authenticate)


def bearer_token(authorization: str | None) -> str | None:
    """The token of an `Authorization: Bearer <token>` header value."""
    if not authorization:
        return None
    scheme, _, value = authorization.strip().partition(" ")
    return value.strip() or None if scheme.lower() == "bearer" else None


def caller_for(token: AccessToken, interface: str) -> Caller:
    """The identity a network transport gives the engine: audited and rate-limited per token."""
    return Caller(
        actor=token.name,
        interface=interface,
        scopes=frozenset(token.scopes),
        audited=True,
        rate_key=token.key_id,
    )
