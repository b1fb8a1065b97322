"""Every error the REST API answers is JSON in its error form (`common.rest.Error`,
`{"detail": ...}`), whoever made it: django-ninja's own answers are, but a method the path does
not take (405, ninja's plain "Method not allowed"), a path under /api/ that does not exist
(Django's 404 page), a failure outside ninja's handlers (Django's 500 page) and the refusals of
the middleware (400, 403) are not. This middleware, the outermost, rewrites those for /api/
paths, keeping the status and its headers (a 405's `Allow`)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from http import HTTPStatus
from typing import cast

from asgiref.sync import iscoroutinefunction
from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.utils.decorators import sync_and_async_middleware
from django.utils.translation import gettext

PREFIX = "/api/"
Handler = Callable[[HttpRequest], HttpResponseBase]
AsyncHandler = Callable[[HttpRequest], Awaitable[HttpResponseBase]]


def _detail(request: HttpRequest, response: HttpResponseBase) -> str:
    status = response.status_code
    if status == 404:
        return gettext("Not found: no %(method)s %(path)s in the API.") % {
            "method": request.method,
            "path": request.path,
        }
    if status == 405:
        return gettext("Method %(method)s not allowed here; allowed: %(allowed)s.") % {
            "method": request.method,
            "allowed": response.get("Allow", ""),
        }
    if status >= 500:
        return gettext("Internal server error.")
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return f"HTTP {status}"


def as_json(request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
    """`response` itself, or, for an /api/ error that is not JSON yet, one that is."""
    if (
        not isinstance(response, HttpResponse)  # a stream (a file) is never an error
        or not request.path.startswith(PREFIX)
        or response.status_code < 400
        or response.get("Content-Type", "").startswith("application/json")
    ):
        return response
    response.content = json.dumps({"detail": _detail(request, response)}).encode()
    response["Content-Type"] = "application/json; charset=utf-8"
    if response.has_header("Content-Length"):  # set by CommonMiddleware for the old body
        response["Content-Length"] = str(len(response.content))
    return response


@sync_and_async_middleware
def json_api_errors(get_response: Handler | AsyncHandler) -> Handler | AsyncHandler:
    if iscoroutinefunction(get_response):
        answer = cast(AsyncHandler, get_response)

        async def async_middleware(request: HttpRequest) -> HttpResponseBase:
            return as_json(request, await answer(request))

        return async_middleware
    respond = cast(Handler, get_response)

    def middleware(request: HttpRequest) -> HttpResponseBase:
        return as_json(request, respond(request))

    return middleware
