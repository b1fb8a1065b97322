"""The REST API (django-ninja) at /api/: one NinjaAPI, with routers from the apps.

Authentication: the Django session (the dashboard's login; unsafe methods need the CSRF
token) or `Authorization: Bearer <token>` with the MCP tokens and their scopes (`read` for
GETs, `control` for changes, `fel` for invoices, `devices` for agents' tools). A logged-in
user holds every scope. Errors are JSON: `{"detail": ...}`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, TooManyFilesSent
from django.http import HttpRequest, HttpResponse
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError
from ninja.security import HttpBearer, SessionAuth

from mcp_endpoint.registry import SCOPES
from mcp_endpoint.tokens import authenticate

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Caller:
    """Who calls and what they may do: what an authenticator returns, so django-ninja keeps
    it as `request.auth` for `need`."""

    actor: str
    scopes: frozenset[str]


class TokenAuth(HttpBearer):
    """`Authorization: Bearer hh_...`, an MCP access token."""

    def authenticate(self, request: HttpRequest, token: str) -> Caller | None:
        found = authenticate(token)
        if found is None:
            return None
        return Caller(actor=found.name, scopes=frozenset(found.scopes))


class UserSession(SessionAuth):
    """The dashboard's session: a homeowner who is logged in may do everything."""

    def authenticate(self, request: HttpRequest, key: str | None) -> Caller | None:
        user = super().authenticate(request, key)
        if user is None:
            return None
        return Caller(actor=user.get_username(), scopes=frozenset(SCOPES))


class Forbidden(HttpError):
    def __init__(self, message: str) -> None:
        super().__init__(403, message)


def need(request: HttpRequest, scope: str) -> str:
    """Refuse (403) a caller whose token lacks `scope`; returns the actor for the audit trail."""
    caller = getattr(request, "auth", None)
    if not isinstance(caller, Caller) or scope not in caller.scopes:
        raise Forbidden(f"This token lacks the '{scope}' scope needed here.")
    return caller.actor


api = NinjaAPI(
    title="HomeHub API",
    version="1.0.0",
    description=(
        "The home (lights, alarm, presence), ESP32 agents, telemetry, the audit trail and FEL "
        "invoices. Authenticate with the dashboard's session or `Authorization: Bearer <token>` "
        "(tokens from `manage.py create_mcp_token`, scopes read, control, fel, devices)."
    ),
    auth=[TokenAuth(), UserSession()],
    urls_namespace="api",
)


@api.exception_handler(AuthenticationError)
def _unauthorized(request: HttpRequest, exc: Exception) -> HttpResponse:
    response = api.create_response(
        request,
        {"detail": "Authentication required: log in or send 'Authorization: Bearer <token>'."},
        status=401,
    )
    response["WWW-Authenticate"] = 'Bearer realm="homehub"'
    return response


@api.exception_handler(RequestDataTooBig)
def _too_big(request: HttpRequest, exc: Exception) -> HttpResponse:
    return api.create_response(request, {"detail": "The request body is too large."}, status=413)


@api.exception_handler(TooManyFilesSent)
def _too_many_files(request: HttpRequest, exc: Exception) -> HttpResponse:
    detail = f"Too many files in one request (at most {settings.DATA_UPLOAD_MAX_NUMBER_FILES})."
    return api.create_response(request, {"detail": detail}, status=413)


@api.exception_handler(Exception)
def _server_error(request: HttpRequest, exc: Exception) -> HttpResponse:
    logger.exception("API error on %s %s", request.method, request.path)
    return api.create_response(request, {"detail": "Internal server error."}, status=500)


def _add_routers() -> None:
    from devices.api import router as home_router
    from fel.api import router as fel_router
    from fel.batch_api import router as batch_router

    api.add_router("/", home_router)
    api.add_router("/invoices/batches", batch_router)  # before /invoices/{invoice_id}
    api.add_router("/invoices", fel_router)


_add_routers()
