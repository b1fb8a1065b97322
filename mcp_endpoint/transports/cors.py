"""CORS for MCP clients that run in a browser page (an inspector, a web agent): a page at an
origin the hub allows (`origin_allowed`: the hub's own, or one of MCP_ALLOWED_ORIGINS) may call
`/mcp` and the OAuth endpoints a client calls itself, and read their answers and the headers a
client needs (`Mcp-Session-Id`, `WWW-Authenticate`...). Pages at other origins get no CORS
headers, so their browser keeps the answer from them; `/mcp` refuses them outright (403).

Credentials travel in the `Authorization` header, never in cookies: no
`Access-Control-Allow-Credentials`, so a page cannot ride on the owner's dashboard login."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from mcp_endpoint.transports.asgi_http import AsgiReceive, AsgiSend, Request, origin_allowed, respond

AsgiApp = Callable[[Mapping[str, Any], AsgiReceive, AsgiSend], Awaitable[None]]

METHODS = "GET, POST, DELETE"
# Response headers a client reads: the session, the era, the authorization challenge, the
# rate limit's wait, and what a resumable stream gives.
EXPOSED = "mcp-session-id, mcp-protocol-version, www-authenticate, retry-after, last-event-id"
PREFLIGHT_SECONDS = "600"


def with_cors(app: AsgiApp) -> AsgiApp:
    """`app`, answering CORS preflights from allowed origins and letting their pages read it."""

    async def cors_app(scope: Mapping[str, Any], receive: AsgiReceive, send: AsgiSend) -> None:
        # Most clients are no browser and send no Origin: for them, one look at the headers.
        if not any(name == b"origin" for name, _ in scope.get("headers", [])):
            await app(scope, receive, send)
            return
        request = Request.from_scope(scope)
        origin = request.headers["origin"]
        if not origin_allowed(request):
            await app(scope, receive, send)
            return
        if request.method == "OPTIONS" and "access-control-request-method" in request.headers:
            await respond(send, 204, headers=_preflight(origin, request.headers))
            return

        async def send_readable(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *_readable(origin)]}
            await send(message)

        await app(scope, receive, send_readable)

    return cors_app


def _preflight(origin: str, headers: dict[str, str]) -> list[tuple[str, str]]:
    # The page's own request headers are allowed as it names them: the origin is trusted, and
    # the 2026-07-28 era's mirrored headers (`Mcp-Param-*`) have open-ended names.
    return [
        ("access-control-allow-origin", origin),
        ("access-control-allow-methods", METHODS),
        ("access-control-allow-headers", headers.get("access-control-request-headers", "")),
        ("access-control-max-age", PREFLIGHT_SECONDS),
        ("vary", "origin"),
    ]


def _readable(origin: str) -> list[tuple[bytes, bytes]]:
    return [
        (b"access-control-allow-origin", origin.encode("latin-1")),
        (b"access-control-expose-headers", EXPOSED.encode()),
        (b"vary", b"origin"),
    ]
