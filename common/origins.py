"""Browser origins, compared as browsers define them: scheme, host and port together.

A page on another port or scheme of the hub's own host is another origin (another program may
serve it: a dev server, a printer's page, anything on the same machine); only the hub's own
origin, or one the settings name, may use a browser's credentials or read the hub's answers.
The hub's own origin is the scheme the request arrived with (HTTPS when the trusted proxy
header of SECURE_PROXY_SSL_HEADER says so) and its `Host`, which must be one of ALLOWED_HOSTS
(against DNS rebinding). Used by the MCP transports and their CORS, and by the dashboard's
WebSocket.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.http.request import split_domain_port, validate_host

Origin = tuple[str, str, int]  # scheme, host, port
DEFAULT_PORTS = {"http": 80, "https": 443}


def parse_origin(text: str) -> Origin | None:
    """`text`'s (scheme, host, port), the default port filled in; None for what is no web
    origin (`null`, another scheme, no host)."""
    try:
        parts = urlsplit(text.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not parts.hostname:
        return None
    return scheme, parts.hostname.lower(), port or DEFAULT_PORTS[scheme]


def host_allowed(host: str | None) -> bool:
    """The `Host` header names the hub: one of ALLOWED_HOSTS, checked as Django checks it.

    Against DNS rebinding: a page on evil.example that resolves to the hub sends
    `Host: evil.example` (and a matching Origin). Requests without a Host pass.
    """
    if not host:
        return True
    allowed = settings.ALLOWED_HOSTS or (
        ["localhost", ".localhost", "127.0.0.1", "[::1]"] if settings.DEBUG else []  # as Django
    )
    domain, _port = split_domain_port(host)
    return bool(domain) and validate_host(domain, allowed)


def request_scheme(scope_scheme: str, headers: Mapping[str, str]) -> str:
    """`http` or `https`: how the browser reached the hub (a WebSocket's `ws`/`wss` count as
    `http`/`https`; behind the trusted proxy, its header says)."""
    proxy_header = getattr(settings, "SECURE_PROXY_SSL_HEADER", None)
    if proxy_header:
        name, secure_value = proxy_header
        given = headers.get(name.removeprefix("HTTP_").replace("_", "-").lower(), "")
        if given.split(",")[0].strip() == secure_value:
            return "https"
    return "https" if scope_scheme in {"https", "wss"} else "http"


def origin_allowed(origin: str | None, *, host: str | None, scheme: str, trusted: Iterable[str] = ()) -> bool:
    """A browser's `Origin` is the hub's own (`scheme`://`host`, the host allowed) or one of
    `trusted`. Requests without an Origin (no browser) pass: this check exists against
    cross-site pages and DNS rebinding, which always send one."""
    if not origin:
        return True
    given = parse_origin(origin)
    if given is None:
        return False
    if any(given == parse_origin(other) for other in trusted):
        return True
    return bool(host) and host_allowed(host) and given == parse_origin(f"{scheme}://{host}")


def scope_headers(scope: Mapping[str, Any]) -> dict[str, str]:
    return {
        name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope.get("headers", [])
    }


AsgiApp = Callable[[Any, Any, Any], Awaitable[None]]


def same_origin_websocket(app: AsgiApp, trusted: Callable[[], Iterable[str]]) -> AsgiApp:
    """`app`, a WebSocket that a browser may open only from the hub's own origin or one of
    `trusted()`: any other is refused at the handshake (HTTP 403), before the app sees it."""

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        headers = scope_headers(scope)
        scheme = request_scheme(scope.get("scheme", "ws"), headers)
        if origin_allowed(headers.get("origin"), host=headers.get("host"), scheme=scheme, trusted=trusted()):
            await app(scope, receive, send)
            return
        await receive()  # websocket.connect
        await send({"type": "websocket.close"})

    return guarded
