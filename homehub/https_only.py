"""SECURE_SSL_REDIRECT for `/mcp`, which reaches its app without Django's middleware
(homehub/asgi.py): plain HTTP is sent to HTTPS as Django's SecurityMiddleware sends every other
path, except that the redirect is a 308, so that an MCP client repeats its POST (with its body)
rather than turning it into a GET. A request is secure as Django judges it: its scheme, or the
SECURE_PROXY_SSL_HEADER a proxy in front sets. The redirect names SECURE_SSL_HOST, or the
request's host once ALLOWED_HOSTS accepts it (400 otherwise, as Django answers)."""

from __future__ import annotations

from django.conf import settings
from django.http.request import split_domain_port, validate_host

from mcp_endpoint.transports.asgi_http import respond, respond_json


def _secure(scope) -> bool:
    proxy_header = getattr(settings, "SECURE_PROXY_SSL_HEADER", None)
    if proxy_header:
        name, secure_value = proxy_header
        wanted = name.removeprefix("HTTP_").replace("_", "-").lower().encode()
        for key, value in scope.get("headers", []):
            if key.lower() == wanted:
                return value.decode("latin-1").split(",", 1)[0].strip() == secure_value
    return scope.get("scheme") == "https"


def _allowed_host(scope) -> str | None:
    host = dict(scope.get("headers", [])).get(b"host", b"").decode("latin-1")
    domain, _port = split_domain_port(host)
    allowed = settings.ALLOWED_HOSTS or ([".localhost", "127.0.0.1", "[::1]"] if settings.DEBUG else [])
    return host if domain and validate_host(domain, allowed) else None


def https_only(app):
    """`app` behind SECURE_SSL_REDIRECT (read per request, as Django does)."""

    async def guarded(scope, receive, send) -> None:
        if scope["type"] != "http" or not settings.SECURE_SSL_REDIRECT or _secure(scope):
            await app(scope, receive, send)
            return
        host = settings.SECURE_SSL_HOST or _allowed_host(scope)
        if host is None:
            await respond_json(send, 400, {"detail": "Invalid Host header."})
            return
        query = scope.get("query_string", b"").decode("latin-1")
        location = f"https://{host}{scope['path']}" + (f"?{query}" if query else "")
        await respond(send, 308, headers=[("location", location)])

    return guarded
