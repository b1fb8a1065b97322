"""The owner's side of the authorization endpoint: what a request asks for (for the consent
page), and the answer sent back to the client's redirect URI once the owner allowed (a code,
for the scopes the owner kept) or denied (`access_denied`). Errors in the client or its redirect
URI are shown to the owner, never redirected (RFC 6749 4.1.2.1); others go back to the client.
Every answer sent back names the hub as its issuer (`iss`, RFC 9207), so that a client talking
to several authorization servers cannot be tricked into taking one's code to another."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from oauthlib.common import add_params_to_uri
from oauthlib.oauth2.rfc6749 import errors

from common import roles
from mcp_endpoint.auth import tokens
from mcp_endpoint.auth.oauth import grants
from mcp_endpoint.auth.oauth.clients import shown_host
from mcp_endpoint.auth.oauth.server import server
from mcp_endpoint.auth.scopes import Scope
from mcp_endpoint.auth.scopes import scopes as declared_scopes
from mcp_endpoint.models import AuthorizationCode, OAuthClient, OAuthGrant


class Refused(Exception):
    """A request that cannot go back to the client: `description` is for the owner."""

    def __init__(self, description: str) -> None:
        super().__init__(description)
        self.description = description


class SendBack(Exception):
    """A request refused with an error the client gets at its redirect URI (`location`)."""

    def __init__(self, location: str) -> None:
        super().__init__(location)
        self.location = location


@dataclass(frozen=True)
class ConsentRequest:
    client_id: str
    client_name: str
    client_host: str
    registered: bool  # dynamically registered: no document vouches for its name
    redirect_uri: str
    scopes: list[Scope]


def review(uri: str) -> ConsentRequest:
    """What the authorization request at `uri` asks for (of the declared scopes; all of them
    when it names none of them); Refused or SendBack if invalid."""
    try:
        scope_names, credentials = server.authorization.validate_authorization_request(uri, "GET")
    except errors.FatalClientError as fatal:
        raise Refused(fatal.description) from None
    except errors.OAuth2Error as error:
        if error.redirect_uri is None:
            raise Refused(error.description) from None
        raise SendBack(_from_issuer(error.in_uri(error.redirect_uri), uri)) from None
    client = credentials["request"].client
    assert isinstance(client, OAuthClient)
    return ConsentRequest(
        client_id=client.client_id,
        client_name=client.client_name,
        client_host=shown_host(client),
        registered=client.kind == OAuthClient.Kind.REGISTERED,
        redirect_uri=credentials["redirect_uri"],
        scopes=[scope for scope in declared_scopes.all() if scope.name in scope_names]
        or declared_scopes.all(),
    )


def approve(uri: str, owner: User, kept: list[str]) -> tuple[str, OAuthGrant | None]:
    """Where to send the owner once they allowed the request at `uri` for the scopes `kept`
    (of those asked for), and the grant made; keeping none is denying. Only an account whose
    household role may connect apps (`common.roles`) may grant."""
    if not roles.can(owner, roles.CONNECT_APPS):
        raise PermissionDenied(roles.refusal(roles.role_of(owner), roles.CONNECT_APPS))
    asked = review(uri)
    chosen = [scope.name for scope in asked.scopes if scope.name in kept]
    if not chosen:
        return deny(uri), None
    headers, _body, _status = server.authorization.create_authorization_response(
        uri, "GET", scopes=chosen, credentials={"user": owner}
    )
    location = _from_issuer(headers["Location"], uri)
    code = parse_qs(urlsplit(location).query).get("code", [""])[0]
    found = (
        AuthorizationCode.objects.filter(code_hash=tokens.hash_secret(code)).select_related("grant").first()
    )
    if found is None:
        return location, None
    grants.record_grant(found.grant)
    return location, found.grant


def deny(uri: str) -> str:
    """Where to send the owner once they denied the request at `uri`."""
    asked = review(uri)
    state = parse_qs(urlsplit(uri).query).get("state", [""])[0]
    params = [("error", "access_denied"), ("error_description", "the owner denied access")]
    if state:
        params.append(("state", state))
    return _from_issuer(add_params_to_uri(asked.redirect_uri, params), uri)


def _from_issuer(location: str, uri: str) -> str:
    """`location` with the `iss` of the hub that `uri` (the authorization request) reached: the
    issuer of its metadata."""
    parts = urlsplit(uri)
    return add_params_to_uri(location, [("iss", f"{parts.scheme}://{parts.netloc}")])
