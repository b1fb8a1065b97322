"""HTTP_MAX_BODY_BYTES for every Django request (REST API, dashboard forms and uploads).

Django reads a whole body (to a temporary file past FILE_UPLOAD_MAX_MEMORY_SIZE) before any
middleware or view runs, and caps only the part it keeps in memory: uploaded files are not
bounded at all. This ASGI wrapper refuses a larger body with 413 and a JSON `detail`, from
its Content-Length before a byte is read, or as soon as the bytes received pass the limit
(chunked uploads). `/mcp` does not pass through here: it has MCP_MAX_MESSAGE_BYTES.
"""

from __future__ import annotations

from django.conf import settings

from mcp_endpoint.transports.asgi_http import BodyTooLarge, respond_json


async def _refuse(send, limit: int) -> None:
    await respond_json(send, 413, {"detail": f"The request body is too large (at most {limit} bytes)."})


def limit_body(app):
    """`app` with request bodies bounded by HTTP_MAX_BODY_BYTES (0: no bound)."""

    async def bounded(scope, receive, send) -> None:
        limit = settings.HTTP_MAX_BODY_BYTES
        if scope["type"] != "http" or limit <= 0:
            await app(scope, receive, send)
            return
        declared = dict(scope.get("headers", [])).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > limit:
            await _refuse(send, limit)
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
            await _refuse(send, limit)

    return bounded
