"""Grants: an owner's consent to a client, and what descends from it. A grant's access token
is one `AccessToken` row (so every transport, the rate limit and the audit treat it as any
other token) whose secret and expiry change at each refresh; its refresh tokens rotate, each
used once. Revoking a grant revokes them all (within MCP_AUTH_CACHE_SECONDS everywhere)."""

from __future__ import annotations

import hmac
import logging
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from audit.models import Event
from audit.services import record_event
from mcp_endpoint.auth import tokens
from mcp_endpoint.auth.oauth.clients import shown_host
from mcp_endpoint.models import AccessToken, AuthorizationCode, OAuthClient, OAuthGrant, RefreshToken

logger = logging.getLogger(__name__)

REFRESH_PREFIX = "hhr_"


def create(client: OAuthClient, owner: User, scopes: list[str], resource: str) -> OAuthGrant:
    return OAuthGrant.objects.create(client=client, owner=owner, scopes=scopes, resource=resource)


def new_access_token(grant: OAuthGrant) -> str:
    """A fresh `hh_<key id>_<secret>` for the grant: its row's key id once it has one."""
    row = grant.access_tokens.first()
    key_id = row.key_id if row is not None else secrets.token_hex(6)
    return f"{tokens.PREFIX}{key_id}_{secrets.token_urlsafe(32)}"


def new_refresh_token() -> str:
    return REFRESH_PREFIX + secrets.token_urlsafe(32)


class ScopeNotGranted(Exception):
    """A refresh asked for a scope its grant does not have."""


def issue(
    grant: OAuthGrant,
    access_token: str,
    refresh_token: str,
    expires_in: int,
    scopes: list[str] | None = None,
) -> None:
    """Store what the token endpoint hands out: the access token's row (created or given its new
    secret) for `scopes` (the grant's, or fewer when a refresh narrowed them: the grant keeps
    its own, which the next refresh may ask for again, RFC 6749 6) and the new refresh token,
    hashed."""
    key_id, secret = access_token[len(tokens.PREFIX) :].split("_", 1)
    now = timezone.now()
    fields = {
        "secret_hash": tokens.hash_secret(secret),
        "expires_at": now + timedelta(seconds=expires_in),
        "scopes": grant.scopes if scopes is None else [name for name in grant.scopes if name in scopes],
    }
    with transaction.atomic():
        updated = AccessToken.objects.filter(key_id=key_id, grant=grant).update(**fields)
        if not updated:
            AccessToken.objects.create(
                name=grant.client.client_name[:100],
                owner=grant.owner,
                key_id=key_id,
                grant=grant,
                resource=grant.resource,
                **fields,
            )
        # What can no longer be used goes (a used refresh token is kept until it would have
        # expired: presented again, it must still be recognised as replayed).
        RefreshToken.objects.filter(grant=grant, expires_at__lt=now).delete()
        AuthorizationCode.objects.filter(expires_at__lt=now).delete()
        RefreshToken.objects.create(
            token_hash=tokens.hash_secret(refresh_token),
            grant=grant,
            expires_at=now + timedelta(seconds=settings.MCP_OAUTH_REFRESH_TOKEN_SECONDS),
        )
    tokens.forget([key_id])


def use_refresh_token(
    raw: str, client: OAuthClient, asked: list[str] | tuple[str, ...] = ()
) -> OAuthGrant | None:
    """The live grant of a refresh token presented by `client` asking for the scopes `asked`
    (none: the grant's), which is thereby used up; None if unknown, expired, another client's
    or revoked. A token used before means it was stolen or replayed: the whole grant is revoked
    (RFC 9700 4.14.2). ScopeNotGranted when `asked` has a scope the grant lacks: refused
    before it is used up, so that the client's next (proper) refresh still works."""
    row = (
        RefreshToken.objects.select_related("grant", "grant__client")
        .filter(token_hash=tokens.hash_secret(raw))
        .first()
    )
    if row is None or row.grant.client_id != client.pk or row.grant.revoked_at is not None:
        return None
    if not row.used:
        if row.expires_at <= timezone.now():
            return None
        if not set(asked) <= set(row.grant.scopes):
            raise ScopeNotGranted(sorted(set(asked) - set(row.grant.scopes)))
    if row.used or not RefreshToken.objects.filter(pk=row.pk, used=False).update(used=True):
        logger.warning("refresh token of grant %s used twice: grant revoked", row.grant.pk)
        revoke(
            row.grant,
            actor=row.grant.client.client_name,
            interface=Event.Interface.MCP_HTTP,
            why="refresh token reused",
        )
        return None
    return row.grant


def grant_of_token(raw: str, client: OAuthClient) -> OAuthGrant | None:
    """The grant of an access or refresh token of `client` (for revocation)."""
    found = RefreshToken.objects.filter(token_hash=tokens.hash_secret(raw), grant__client=client).first()
    if found is not None:
        return found.grant
    if raw.startswith(tokens.PREFIX):
        key_id, _, secret = raw[len(tokens.PREFIX) :].partition("_")
        row = AccessToken.objects.filter(key_id=key_id, grant__client=client).select_related("grant").first()
        if (
            row is not None
            and row.grant is not None
            and hmac.compare_digest(row.secret_hash, tokens.hash_secret(secret))
        ):
            return row.grant
    return None


def revoke(grant: OAuthGrant, *, actor: str, interface: str, why: str = "") -> bool:
    """Revoke the grant, its access token and its refresh tokens, audited as `oauth.revoke`
    (`why`: when the hub revoked it itself); False if it already was."""
    with transaction.atomic():
        first = OAuthGrant.objects.filter(pk=grant.pk, revoked_at=None).update(revoked_at=timezone.now())
        RefreshToken.objects.filter(grant=grant).update(used=True)
        tokens.revoke_all(AccessToken.objects.filter(grant=grant), actor=actor, interface=interface)
        if first:
            record_event(
                actor=actor,
                interface=interface,
                action="oauth.revoke",
                target=f"oauth:{shown_host(grant.client)}"[:200],
                before={
                    "client": grant.client.client_name,
                    "scopes": list(grant.scopes),
                    "owner": grant.owner.get_username(),
                },
                after={"reason": why} if why else None,
            )
    return bool(first)


def record_grant(grant: OAuthGrant) -> None:
    """Audit the owner's consent (`oauth.grant`, on the dashboard's consent page)."""
    record_event(
        actor=grant.owner.get_username(),
        interface=Event.Interface.DASHBOARD,
        action="oauth.grant",
        target=f"oauth:{shown_host(grant.client)}"[:200],
        after={
            "client": grant.client.client_name,
            "client_id": grant.client.client_id[:200],
            "scopes": grant.scopes,
        },
    )


@dataclass(frozen=True)
class ConnectedApp:
    grant_id: int
    client_name: str
    client_host: str
    owner: str
    scopes: list[str]
    granted_at: datetime
    last_used_at: datetime | None


def connected_apps() -> list[ConnectedApp]:
    """Every grant not revoked whose code was exchanged (a token made), newest first, with when
    its token was last used."""
    grants = (
        OAuthGrant.objects.filter(revoked_at=None, access_tokens__isnull=False)
        .select_related("client", "owner")
        .annotate(last_used=Max("access_tokens__last_used_at"))
    )
    return [_app(grant, grant.last_used) for grant in grants]


def revoke_app(grant_id: int, *, actor: str, interface: str) -> ConnectedApp | None:
    """Revoke a connected app's grant; the app as it was, or None if there is no such live grant."""
    grant = OAuthGrant.objects.filter(pk=grant_id, revoked_at=None).select_related("client", "owner").first()
    if grant is None or not revoke(grant, actor=actor, interface=interface):
        return None
    return _app(grant, None)


def _app(grant: OAuthGrant, last_used: datetime | None) -> ConnectedApp:
    return ConnectedApp(
        grant_id=grant.pk,
        client_name=grant.client.client_name,
        client_host=shown_host(grant.client),
        owner=grant.owner.get_username(),
        scopes=list(grant.scopes),
        granted_at=grant.created_at,
        last_used_at=last_used,
    )
