"""The OAuth endpoints as oauthlib builds them: the authorization code grant with PKCE S256
only (oauthlib also knows `plain`, which OAuth 2.1 and MCP refuse), rotating refresh tokens,
revocation, and a check of the `resource` parameter (RFC 8707, which oauthlib does not know)
on every authorization and token request.

oauthlib takes the request as URI, method, body and headers; the URI's origin names the hub,
and so the resource (`resources.hub_resource`) a token must be for."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from oauthlib.common import Request
from oauthlib.oauth2 import (
    AuthorizationEndpoint,
    BearerToken,
    RefreshTokenGrant,
    RevocationEndpoint,
    TokenEndpoint,
)
from oauthlib.oauth2.rfc6749 import errors
from oauthlib.oauth2.rfc6749.grant_types import AuthorizationCodeGrant
from oauthlib.oauth2.rfc6749.grant_types.authorization_code import code_challenge_method_s256

from mcp_endpoint.auth.oauth import grants
from mcp_endpoint.auth.oauth.resource_indicators import hub_resource, same_resource
from mcp_endpoint.auth.oauth.validator import HubRequestValidator, grant_of, keep


class InvalidTargetError(errors.OAuth2Error):
    """RFC 8707 2: the resource asked for is not this hub's."""

    error = "invalid_target"
    status_code = 400


class S256AuthorizationCodeGrant(AuthorizationCodeGrant):
    _code_challenge_methods = {"S256": code_challenge_method_s256}


def _check_resource(request: Request) -> None:
    """The request's `resource` is the hub's `/mcp` (none given means it too); kept on the
    request as `hub_resource`."""
    parts = urlsplit(request.uri)
    expected = hub_resource(f"{parts.scheme}://{parts.netloc}")
    named = getattr(request, "resource", None)
    if named is not None and not same_resource(named, expected):
        raise InvalidTargetError(
            description=f"resource must be this hub's MCP endpoint {expected}", request=request
        )
    keep(request, "hub_resource", expected)


def _check_authorization_resource(request: Request) -> dict[str, Any]:
    """`_check_resource` as a pre-authorization validator, whose result oauthlib merges into
    what the request asks for (nothing to add)."""
    _check_resource(request)
    return {}


def _access_token(request: Request) -> str:
    return grants.new_access_token(grant_of(request))


def _refresh_token(request: Request) -> str:
    return grants.new_refresh_token()


def _expires_in(request: Request) -> int:
    return int(settings.MCP_OAUTH_ACCESS_TOKEN_SECONDS)


class Server:
    """The three endpoints, over one validator."""

    def __init__(self) -> None:
        validator = HubRequestValidator()
        bearer = BearerToken(validator, _access_token, _expires_in, _refresh_token)
        code = S256AuthorizationCodeGrant(
            validator,
            pre_auth=[_check_authorization_resource],
            pre_token=[_check_resource],
        )
        refresh = RefreshTokenGrant(validator, issue_new_refresh_tokens=True, pre_token=[_check_resource])
        # The stubs type `default_token_type` as a name; oauthlib takes the token handler.
        self.authorization = AuthorizationEndpoint(
            default_response_type="code",
            default_token_type=bearer,  # type: ignore[arg-type]
            response_types={"code": code},
        )
        self.token = TokenEndpoint(
            default_grant_type="authorization_code",
            default_token_type=bearer,  # type: ignore[arg-type]
            grant_types={"authorization_code": code, "refresh_token": refresh},
        )
        self.revocation = RevocationEndpoint(
            validator, supported_token_types=("access_token", "refresh_token")
        )


server = Server()
