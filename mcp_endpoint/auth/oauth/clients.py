"""The clients the OAuth server knows: found by their Client ID Metadata Document (read through
`client_documents`, kept for MCP_OAUTH_CLIENT_CACHE_SECONDS) or registered dynamically
(RFC 7591, the fallback for clients without a document). Every client is public: no secrets;
PKCE binds each code to the client that asked for it."""

from __future__ import annotations

import json
import secrets
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.utils import timezone

from common.storable import storable_json
from mcp_endpoint.auth.oauth import client_documents
from mcp_endpoint.models import OAuthClient

REGISTERED_PREFIX = "hhc_"
LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1"}
GRANT_TYPES = {"authorization_code", "refresh_token"}
# Anyone may register (RFC 7591 is unauthenticated) or name a document: a client nobody
# authorized within this long is deleted, so that clients cannot pile up.
UNUSED_CLIENT = timedelta(days=1)
# What is kept of a client's document (the fields RFC 7591 defines that the hub shows or
# answers with), at most so long as JSON.
DOCUMENT_FIELDS = (
    "client_id",
    "client_name",
    "client_uri",
    "redirect_uris",
    "grant_types",
    "response_types",
    "token_endpoint_auth_method",
    "scope",
    "software_id",
    "software_version",
)
MAX_KEPT_CHARS = 16 * 1024


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
    kept = storable_json({key: document[key] for key in DOCUMENT_FIELDS if key in document})
    if len(json.dumps(kept)) > MAX_KEPT_CHARS:
        raise client_documents.ClientDocumentError(
            f"client metadata document's client fields are longer than {MAX_KEPT_CHARS} characters"
        )
    fields = {
        "kind": OAuthClient.Kind.DOCUMENT,
        "client_name": _name(kept.get("client_name"), client_id),
        "redirect_uris": kept["redirect_uris"],
        "metadata": kept,
        "fetched_at": timezone.now(),
    }
    if known is None:
        _make_room_for_a_document()
    client, _ = OAuthClient.objects.update_or_create(client_id=client_id, defaults=fields)
    return client


def _make_room_for_a_document() -> None:
    """Anyone can make the hub keep a document (by naming its URL at the token endpoint): one
    that no grant uses goes after UNUSED_CLIENT, and past MCP_OAUTH_DOCUMENT_CLIENTS_MAX the
    oldest unused ones go first (a document is only a copy: read again when named again). When
    every kept document is in use, a new one is refused."""
    now = timezone.now()
    documents = OAuthClient.objects.filter(kind=OAuthClient.Kind.DOCUMENT)
    unused = documents.filter(grants__isnull=True)
    unused.filter(created_at__lt=now - UNUSED_CLIENT).delete()
    excess = documents.count() - settings.MCP_OAUTH_DOCUMENT_CLIENTS_MAX + 1
    if excess <= 0:
        return
    oldest = list(unused.order_by("fetched_at", "pk").values_list("pk", flat=True)[:excess])
    OAuthClient.objects.filter(pk__in=oldest).delete()
    if len(oldest) < excess:
        raise client_documents.ClientDocumentError(
            "this hub keeps no more client metadata documents: the owner may revoke an unused connected app"
        )


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
        created_at__lt=timezone.now() - UNUSED_CLIENT,
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
