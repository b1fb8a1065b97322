"""The clients the OAuth server knows: found by their Client ID Metadata Document (read through
`client_documents`, kept for MCP_OAUTH_CLIENT_CACHE_SECONDS) or registered dynamically
(RFC 7591, the fallback for clients without a document). Every client is public: no secrets;
PKCE binds each code to the client that asked for it."""

from __future__ import annotations

import secrets
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.utils import timezone

from mcp_endpoint.models import OAuthClient
from mcp_endpoint.oauth import client_documents

REGISTERED_PREFIX = "hhc_"
LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1"}
GRANT_TYPES = {"authorization_code", "refresh_token"}
# Anyone may register (RFC 7591 is unauthenticated): a registration nobody authorized within
# this long is deleted, so that registrations cannot pile up.
UNUSED_REGISTRATION = timedelta(days=1)


class RegistrationError(Exception):
    """A registration refused (RFC 7591 3.2.2): `error` and a description."""

    def __init__(self, error: str, description: str) -> None:
        super().__init__(description)
        self.error = error
        self.description = description


def find(client_id: str) -> OAuthClient:
    """The client `client_id` names; its document is read when not known or kept too long.
    ClientDocumentError (the reason) when its document is refused, LookupError when a
    registered id is unknown."""
    known = OAuthClient.objects.filter(client_id=client_id).first()
    if not client_documents.is_document_url(client_id):
        if known is None:
            raise LookupError(f"unknown client_id {client_id[:100]}")
        return known
    kept = timedelta(seconds=settings.MCP_OAUTH_CLIENT_CACHE_SECONDS)
    if known is not None and known.fetched_at is not None and timezone.now() - known.fetched_at < kept:
        return known
    document = client_documents.fetch(client_id)
    refused = [uri for uri in document["redirect_uris"] if not allowed_redirect_uri(uri)]
    if refused:
        raise client_documents.ClientDocumentError(
            f"redirect URI {refused[0][:200]} must be https, or http to a loopback address"
        )
    fields = {
        "kind": OAuthClient.Kind.DOCUMENT,
        "client_name": _name(document.get("client_name"), client_id),
        "redirect_uris": document["redirect_uris"],
        "metadata": document,
        "fetched_at": timezone.now(),
    }
    client, _ = OAuthClient.objects.update_or_create(client_id=client_id, defaults=fields)
    return client


def register(metadata: Any) -> OAuthClient:
    """A client registered from its metadata (RFC 7591); RegistrationError if refused."""
    if not isinstance(metadata, dict):
        raise RegistrationError("invalid_client_metadata", "the body must be a JSON object")
    uris = metadata.get("redirect_uris")
    if not isinstance(uris, list) or not uris or not all(isinstance(u, str) for u in uris):
        raise RegistrationError("invalid_redirect_uri", "redirect_uris must be a non-empty list of URLs")
    for uri in uris:
        if not allowed_redirect_uri(uri):
            raise RegistrationError(
                "invalid_redirect_uri",
                f"redirect URI {uri[:200]} must be https, or http to a loopback address, without a fragment",
            )
    method = metadata.get("token_endpoint_auth_method", "none")
    if method != "none":
        raise RegistrationError(
            "invalid_client_metadata", "token_endpoint_auth_method must be none (public clients, PKCE)"
        )
    grant_types = metadata.get("grant_types", ["authorization_code", "refresh_token"])
    if not isinstance(grant_types, list) or not set(grant_types) <= GRANT_TYPES:
        raise RegistrationError(
            "invalid_client_metadata", "grant_types may be authorization_code and refresh_token only"
        )
    if metadata.get("response_types", ["code"]) != ["code"]:
        raise RegistrationError("invalid_client_metadata", "response_types must be [code]")
    OAuthClient.objects.filter(
        kind=OAuthClient.Kind.REGISTERED,
        grants__isnull=True,
        created_at__lt=timezone.now() - UNUSED_REGISTRATION,
    ).delete()
    client_id = REGISTERED_PREFIX + secrets.token_urlsafe(18)
    return OAuthClient.objects.create(
        client_id=client_id,
        kind=OAuthClient.Kind.REGISTERED,
        client_name=_name(metadata.get("client_name"), urlsplit(uris[0]).hostname or client_id),
        redirect_uris=uris,
        metadata=metadata,
    )


def registration_response(client: OAuthClient) -> dict[str, Any]:
    """RFC 7591 3.2.1's answer for a client just registered."""
    return {
        "client_id": client.client_id,
        "client_id_issued_at": int(client.created_at.timestamp()),
        "client_name": client.client_name,
        "redirect_uris": client.redirect_uris,
        "grant_types": client.metadata.get("grant_types", sorted(GRANT_TYPES)),
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    }


def allowed_redirect_uri(uri: str) -> bool:
    parts = urlsplit(uri)
    if parts.fragment or not parts.hostname:
        return False
    return parts.scheme == "https" or (parts.scheme == "http" and parts.hostname in LOOPBACK_HOSTS)


def shown_host(client: OAuthClient) -> str:
    """The host the owner is told the client is: its document's, or its redirect URI's."""
    source = client.client_id if client.kind == OAuthClient.Kind.DOCUMENT else client.redirect_uris[0]
    return urlsplit(source).hostname or ""


def _name(value: Any, fallback: str) -> str:
    return value.strip()[:200] if isinstance(value, str) and value.strip() else fallback[:200]
