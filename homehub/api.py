"""The REST API (django-ninja) at /api/: one NinjaAPI, mounting the routers the apps define.

Authentication: the Django session (the dashboard's login; unsafe methods need the CSRF
token) or `Authorization: Bearer <token>` with the MCP tokens and their scopes (`read` for
GETs, `control` for changes, `fel` for invoices, `devices` for agents' tools, `automations`
for writing scenes). A logged-in
person may do what their household role allows (`common.roles`). The routers check both with
`common.rest.need`. Errors are JSON: `{"detail": ...}`. The docs (/api/docs) and the schema
(/api/openapi.json) need a login.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core.exceptions import RequestDataTooBig, TooManyFilesSent
from django.http import HttpRequest, HttpResponse
from django.utils.translation import gettext
from ninja import NinjaAPI
from ninja.errors import AuthenticationError
from ninja.security import HttpBearer, SessionAuth

from audit.api import router as events_router
from automations.api import router as automations_router
from common import roles
from common.rest import RestCaller
from devices.agents.api import router as agents_router
from devices.home.api import router as home_router
from devices.telemetry.api import router as telemetry_router
from fel.api import router as fel_router
from fel.batch_api import router as batch_router
from mcp_endpoint.auth.scopes import scopes
from mcp_endpoint.auth.tokens import authenticate
from mcp_endpoint.engine.pipeline import InsufficientScope, NotConfirmed, RateLimited, ToolRefused

logger = logging.getLogger(__name__)


class TokenAuth(HttpBearer):
    """`Authorization: Bearer hh_...`, an MCP access token."""

    def authenticate(self, request: HttpRequest, token: str) -> RestCaller | None:
        found = authenticate(token)
        if found is None or found.resource:  # OAuth tokens are for the resource they name: /mcp
            return None
        return RestCaller(actor=found.name, scopes=frozenset(found.scopes), by_token=True)


class UserSession(SessionAuth):
    """The dashboard's session: a logged-in person, held to their household role (`need`
    checks the role's capability beside the scope, which a session always has)."""

    def authenticate(self, request: HttpRequest, key: str | None) -> RestCaller | None:
        user = super().authenticate(request, key)
        role = roles.role_of(user)
        if user is None or role is None:
            return None
        return RestCaller(actor=user.get_username(), scopes=frozenset(scopes.names()), role=role)


api = NinjaAPI(
    title="HomeHub API",
    version="1.0.0",
    description=(
        "The home (lights, alarm, presence), ESP32 agents, telemetry, the audit trail and FEL "
        "invoices. Authenticate with the dashboard's session (held to the account's household role: "
        "guest, member or owner) or `Authorization: Bearer <token>` "
        "(tokens from `manage.py create_mcp_token`, scopes read, control, fel, devices, automations)."
    ),
    auth=[TokenAuth(), UserSession()],
    urls_namespace="api",
    # The docs and the schema describe every door of the home: for people who log in.
    docs_decorator=login_required,
)


@api.exception_handler(AuthenticationError)
def _unauthorized(request: HttpRequest, exc: Exception) -> HttpResponse:
    response = api.create_response(
        request,
        {"detail": gettext("Authentication required: log in or send 'Authorization: Bearer <token>'.")},
        status=401,
    )
    response["WWW-Authenticate"] = 'Bearer realm="homehub"'
    return response


@api.exception_handler(RequestDataTooBig)
def _too_big(request: HttpRequest, exc: Exception) -> HttpResponse:
    return api.create_response(request, {"detail": gettext("The request body is too large.")}, status=413)


@api.exception_handler(TooManyFilesSent)
def _too_many_files(request: HttpRequest, exc: Exception) -> HttpResponse:
    detail = f"Too many files in one request (at most {settings.DATA_UPLOAD_MAX_NUMBER_FILES})."
    return api.create_response(request, {"detail": detail}, status=413)


@api.exception_handler(ToolRefused)
def _refused(request: HttpRequest, exc: ToolRefused) -> HttpResponse:
    """A call the tool-call pipeline refused (views that call tools through it)."""
    status = {InsufficientScope: 403, NotConfirmed: 403, RateLimited: 429}.get(type(exc), 404)
    return api.create_response(request, {"detail": exc.message}, status=status)


@api.exception_handler(Exception)
def _server_error(request: HttpRequest, exc: Exception) -> HttpResponse:
    logger.exception("API error on %s %s", request.method, request.path)
    return api.create_response(request, {"detail": gettext("Internal server error.")}, status=500)


api.add_router("/", home_router)
api.add_router("/", agents_router)
api.add_router("/", telemetry_router)
api.add_router("/", events_router)
api.add_router("/", automations_router)
api.add_router("/invoices/batches", batch_router)  # before /invoices/{invoice_id}
api.add_router("/invoices", fel_router)
