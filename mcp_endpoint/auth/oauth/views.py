"""The OAuth endpoints clients call directly: authorization-server metadata (RFC 8414), token,
revocation (RFC 7009) and dynamic client registration (RFC 7591). The authorization endpoint,
where the owner logs in and consents, is the dashboard's."""

from __future__ import annotations

import json

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from common.addresses import address_key
from mcp_endpoint.auth import ratelimit
from mcp_endpoint.auth.oauth import clients
from mcp_endpoint.auth.oauth.server import server
from mcp_endpoint.auth.scopes import scopes

MAX_REGISTRATION_BYTES = 64 * 1024
REGISTRATION_WINDOW_SECONDS = 3600


def issuer(request: HttpRequest) -> str:
    """The hub as an authorization server: its base URL."""
    return f"{request.scheme}://{request.get_host()}"


@require_GET
def authorization_server_metadata(request: HttpRequest) -> JsonResponse:
    base = issuer(request)
    return JsonResponse(
        {
            "issuer": base,
            "authorization_endpoint": base + reverse("oauth-authorize"),
            "token_endpoint": base + reverse("oauth-token"),
            "registration_endpoint": base + reverse("oauth-register"),
            "revocation_endpoint": base + reverse("oauth-revoke"),
            "scopes_supported": list(scopes.names()),
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none"],
            "revocation_endpoint_auth_methods_supported": ["none"],
            "client_id_metadata_document_supported": True,
            "authorization_response_iss_parameter_supported": True,
        }
    )


def _answer(headers: dict[str, str], body: str, status: int) -> HttpResponse:
    response = HttpResponse(body, status=status, content_type="application/json")
    for name, value in headers.items():
        response[name] = value
    return response


def _form(request: HttpRequest) -> str:
    return request.body.decode("utf-8", errors="replace")


@csrf_exempt
@require_POST
def token(request: HttpRequest) -> HttpResponse:
    return _answer(
        *server.token.create_token_response(
            request.build_absolute_uri(), "POST", _form(request), dict(request.headers)
        )
    )


@csrf_exempt
@require_POST
def revoke(request: HttpRequest) -> HttpResponse:
    return _answer(
        *server.revocation.create_revocation_response(
            request.build_absolute_uri(), "POST", _form(request), dict(request.headers)
        )
    )


@csrf_exempt
@require_POST
def register(request: HttpRequest) -> JsonResponse:
    """RFC 7591, open to anyone: bounded per address (`address_key`: an IPv6 /64 counts as one)."""
    address = address_key(request.META.get("REMOTE_ADDR") or "")
    wait = ratelimit.retry_after(
        f"oauth-register:{address}", settings.MCP_OAUTH_REGISTRATIONS_PER_HOUR, REGISTRATION_WINDOW_SECONDS
    )
    if wait is not None:
        refused = JsonResponse(
            {
                "error": "temporarily_unavailable",
                "error_description": f"too many registrations from this address: retry in {wait:.0f} s",
            },
            status=429,
        )
        refused["Retry-After"] = f"{wait:.0f}"
        return refused
    if len(request.body) > MAX_REGISTRATION_BYTES:
        return JsonResponse(
            {"error": "invalid_client_metadata", "error_description": "registration is too large"}, status=400
        )
    try:
        client = clients.register(json.loads(request.body))
    except ValueError:
        return JsonResponse(
            {"error": "invalid_client_metadata", "error_description": "the body must be JSON"}, status=400
        )
    except clients.RegistrationError as refused:
        return JsonResponse({"error": refused.error, "error_description": refused.description}, status=400)
    return JsonResponse(clients.registration_response(client), status=201)
