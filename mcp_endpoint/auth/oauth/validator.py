"""oauthlib's questions about clients, codes and tokens, answered from our models. Each answer
that finds a row leaves it on oauthlib's request (`client`, `grant`) for the next question."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone
from oauthlib.common import Request
from oauthlib.oauth2 import RequestValidator
from oauthlib.oauth2.rfc6749 import errors, utils

from audit.models import Event
from mcp_endpoint.auth import tokens
from mcp_endpoint.auth.oauth import clients, grants
from mcp_endpoint.auth.oauth.client_documents import ClientDocumentError, FetchesBusy
from mcp_endpoint.auth.scopes import scopes as declared_scopes
from mcp_endpoint.models import AuthorizationCode, OAuthClient, OAuthGrant

CODE_SECONDS = 300
GRANT_TYPES = ("authorization_code", "refresh_token")


class FetchesBusyError(errors.FatalClientError):
    """Too many client documents being read at once: 503 `temporarily_unavailable`, so that the
    client retries later. Fatal, as every error about the client: the owner's browser is never
    sent to a redirect URI not yet checked."""

    error = "temporarily_unavailable"
    status_code = 503


# What one answer found, kept on oauthlib's request for the next (its own attributes are typed
# for its own values; ours go in the instance's namespace).
def keep(request: Request, name: str, value: object) -> None:
    vars(request)[name] = value


def client_of(request: Request) -> OAuthClient:
    client = request.client
    assert isinstance(client, OAuthClient), "the client is found before it is asked about"
    return client


def grant_of(request: Request) -> OAuthGrant:
    grant = vars(request).get("grant")
    assert isinstance(grant, OAuthGrant), "the grant is found before its tokens are made"
    return grant


def resource_of(request: Request) -> str:
    resource = vars(request).get("hub_resource")
    assert isinstance(resource, str), "the resource is checked before a code is made"
    return resource


class HubRequestValidator(RequestValidator):
    """Public clients only (no secrets; PKCE S256 required), a redirect URI must be given and
    be one the client named exactly, scopes are the declared ones."""

    # --- clients ------------------------------------------------------------------------

    def _client(self, client_id: str, request: Request) -> OAuthClient | None:
        client = request.client
        if isinstance(client, OAuthClient) and client.client_id == client_id:
            return client
        try:
            client = clients.find(client_id)
        except LookupError:
            return None
        except FetchesBusy as busy:
            raise FetchesBusyError(description=str(busy), request=request) from None
        except ClientDocumentError as refused:
            raise errors.InvalidClientIdError(description=str(refused), request=request) from None
        request.client = client
        return client

    def validate_client_id(self, client_id: str, request: Request, *args: Any, **kwargs: Any) -> bool:
        return self._client(client_id, request) is not None

    def client_authentication_required(self, request: Request, *args: Any, **kwargs: Any) -> bool:
        return False

    def authenticate_client_id(self, client_id: str, request: Request, *args: Any, **kwargs: Any) -> bool:
        return bool(client_id) and self._client(client_id, request) is not None

    def validate_redirect_uri(
        self, client_id: str, redirect_uri: str, request: Request, *args: Any, **kwargs: Any
    ) -> bool:
        client = self._client(client_id, request)
        return client is not None and redirect_uri in client.redirect_uris

    def get_default_redirect_uri(  # type: ignore[override]  # None is oauthlib's "no default"
        self, client_id: str, request: Request, *args: Any, **kwargs: Any
    ) -> None:
        return None  # the request must name one (OAuth 2.1)

    def validate_response_type(
        self,
        client_id: str,
        response_type: str,
        client: Any,
        request: Request,
        *args: Any,
        **kwargs: Any,
    ) -> bool:
        return response_type == "code"

    def validate_grant_type(
        self,
        client_id: str,
        grant_type: str,
        client: Any,
        request: Request,
        *args: Any,
        **kwargs: Any,
    ) -> bool:
        return grant_type in GRANT_TYPES

    # --- scopes -------------------------------------------------------------------------

    def validate_scopes(
        self,
        client_id: str,
        scopes: list[str],
        client: Any,
        request: Request,
        *args: Any,
        **kwargs: Any,
    ) -> bool:
        """Scopes the hub does not declare (`offline_access`, `openid`...) are ignored, as RFC
        6749 3.3 allows: the owner is offered the declared ones asked for (`consent.review`)."""
        return True

    def get_default_scopes(self, client_id: str, request: Request, *args: Any, **kwargs: Any) -> list[str]:
        return list(declared_scopes.names())

    # --- codes --------------------------------------------------------------------------

    def is_pkce_required(self, client_id: str, request: Request) -> bool:
        return True

    def save_authorization_code(
        self, client_id: str, code: Any, request: Request, *args: Any, **kwargs: Any
    ) -> None:
        owner = request.user
        assert isinstance(owner, User), "the consent view passes the logged-in owner"
        grant = grants.create(client_of(request), owner, list(request.scopes or []), resource_of(request))
        AuthorizationCode.objects.create(
            code_hash=tokens.hash_secret(code["code"]),
            grant=grant,
            redirect_uri=str(request.redirect_uri),
            code_challenge=str(request.code_challenge),
            code_challenge_method=str(request.code_challenge_method),
            expires_at=timezone.now() + timedelta(seconds=CODE_SECONDS),
        )

    def _code(self, code: str) -> AuthorizationCode | None:
        return (
            AuthorizationCode.objects.select_related("grant", "grant__client", "grant__owner")
            .filter(code_hash=tokens.hash_secret(code))
            .first()
        )

    def validate_code(
        self, client_id: str, code: str, client: Any, request: Request, *args: Any, **kwargs: Any
    ) -> bool:
        """A live code of this client, used up now (a failed PKCE check burns it too). A code
        presented again revokes what it was exchanged for (OAuth 2.1 4.1.3)."""
        row = self._code(code)
        if row is None or row.grant.client_id != client_of(request).pk:
            return False
        with transaction.atomic():
            first_use = AuthorizationCode.objects.filter(pk=row.pk, used=False).update(used=True)
        if not first_use:
            grants.revoke(
                row.grant,
                actor=row.grant.client.client_name,
                interface=Event.Interface.MCP_HTTP,
                why="authorization code reused",
            )
            return False
        if row.expires_at <= timezone.now() or row.grant.revoked_at is not None:
            return False
        keep(request, "grant", row.grant)
        request.user = row.grant.owner
        request.scopes = list(row.grant.scopes)
        return True

    def get_code_challenge(self, code: str, request: Request) -> str:
        row = self._code(code)
        return row.code_challenge if row is not None else ""  # matches no verifier

    def get_code_challenge_method(self, code: str, request: Request) -> str:
        row = self._code(code)
        return row.code_challenge_method if row is not None else ""

    def confirm_redirect_uri(
        self,
        client_id: str,
        code: str,
        redirect_uri: str,
        client: Any,
        request: Request,
        *args: Any,
        **kwargs: Any,
    ) -> bool:
        row = self._code(code)
        return row is not None and row.redirect_uri == redirect_uri

    def invalidate_authorization_code(
        self, client_id: str, code: str, request: Request, *args: Any, **kwargs: Any
    ) -> None:
        """Already used up by `validate_code`."""

    # --- tokens -------------------------------------------------------------------------

    def save_bearer_token(
        self, token: Mapping[str, Any], request: Request, *args: Any, **kwargs: Any
    ) -> None:
        grants.issue(
            grant_of(request),
            token["access_token"],
            token["refresh_token"],
            token["expires_in"],
            scopes=list(request.scopes or []),
        )

    def validate_refresh_token(
        self, refresh_token: str, client: Any, request: Request, *args: Any, **kwargs: Any
    ) -> bool:
        """The refresh token is used up here, once everything else about the request was found
        right (its resource, checked before; the scopes it asks for, checked here): a refused
        refresh leaves the token good."""
        try:
            grant = grants.use_refresh_token(
                refresh_token, client_of(request), utils.scope_to_list(request.scope) or ()
            )
        except grants.ScopeNotGranted:
            raise errors.InvalidScopeError(request=request) from None
        if grant is None:
            return False
        keep(request, "grant", grant)
        request.user = grant.owner
        return True

    def get_original_scopes(
        self, refresh_token: str, request: Request, *args: Any, **kwargs: Any
    ) -> list[str]:
        return list(grant_of(request).scopes)

    def rotate_refresh_token(self, request: Request) -> bool:
        return True

    def revoke_token(
        self, token: str, token_type_hint: str | None, request: Request, *args: Any, **kwargs: Any
    ) -> None:
        grant = grants.grant_of_token(token, client_of(request))
        if grant is not None:
            grants.revoke(grant, actor=grant.client.client_name, interface=Event.Interface.MCP_HTTP)
