"""HTTP_MAX_BODY_BYTES for every Django request (REST API, dashboard forms and uploads).

Django reads a whole body (to a temporary file past FILE_UPLOAD_MAX_MEMORY_SIZE) before any
middleware or view runs, and caps only the part it keeps in memory: uploaded files are not
bounded at all. This ASGI wrapper refuses a larger body with 413 and a JSON `detail`, from
its Content-Length before a byte is read, or as soon as the bytes received pass the limit
(chunked uploads). The `detail` is in the request's language, picked as LocaleMiddleware picks
it (the language cookie, which an account's choice sets too, then Accept-Language): Django's
middleware has not run yet. `/mcp` does not pass through here: it has MCP_MAX_MESSAGE_BYTES.
"""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest
from django.http.cookie import parse_cookie
from django.utils import translation

from mcp_endpoint.transports.asgi_http import BodyTooLarge, respond_json


async def _refuse(scope, send, limit: int) -> None:
    with translation.override(_language(scope)):
        said = translation.gettext("The request body is too large (at most %(limit)s bytes).")
    await respond_json(send, 413, {"detail": said % {"limit": limit}})


def _language(scope) -> str:
    """The request's language from its headers alone (its cookie, then Accept-Language)."""
    request = HttpRequest()
    for name, value in scope.get("headers", []):
        header = name.decode("latin-1").upper().replace("-", "_")
        if header in ("COOKIE", "ACCEPT_LANGUAGE"):
            request.META[f"HTTP_{header}"] = value.decode("latin-1")
    request.COOKIES = parse_cookie(request.META.get("HTTP_COOKIE", ""))
    return translation.get_language_from_request(request)


def limit_body(app):
    """`app` with request bodies bounded by HTTP_MAX_BODY_BYTES (0: no bound)."""

    async def bounded(scope, receive, send) -> None:
        limit = settings.HTTP_MAX_BODY_BYTES
        if scope["type"] != "http" or limit <= 0:
            await app(scope, receive, send)
            return
        declared = dict(scope.get("headers", [])).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > limit:
            await _refuse(scope, send, limit)
            return
        received = 0

        async def counted_receive():
            nonlocal received
            message = await receive()
            received += len(message.get("body", b""))
            if received > limit:
                raise BodyTooLarge
            return message

        try:
            await app(scope, counted_receive, send)
        except BodyTooLarge:  # Django reads the whole body before it answers: nothing sent yet
            await _refuse(scope, send, limit)

    return bounded
