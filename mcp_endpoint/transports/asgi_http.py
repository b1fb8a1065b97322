"""Small helpers for answering raw ASGI HTTP requests without Django's request stack."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.http.request import split_domain_port, validate_host

from mcp_endpoint import jsonrpc

# ASGI as these transports speak it: the events are plain dicts.
AsgiReceive = Callable[[], Awaitable[dict[str, Any]]]
AsgiSend = Callable[[dict[str, Any]], Awaitable[None]]


class BodyTooLarge(Exception):
    pass


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    query: str
    scheme: str

    @classmethod
    def from_scope(cls, scope: Mapping[str, Any]) -> Request:
        headers: dict[str, str] = {}
        for name, value in scope.get("headers", []):
            key = name.decode("latin-1").lower()
            text = value.decode("latin-1")
            headers[key] = f"{headers[key]}, {text}" if key in headers else text
        return cls(
            method=scope.get("method", "GET"),
            path=scope.get("path", "/"),
            headers=headers,
            query=scope.get("query_string", b"").decode("latin-1"),
            scheme=scope.get("scheme", "http"),
        )

    @property
    def base_url(self) -> str:
        host = self.headers.get("host", "localhost")
        return f"{self.scheme}://{host}"


async def read_body(receive: AsgiReceive, headers: dict[str, str], limit: int) -> bytes:
    """The whole request body; BodyTooLarge past `limit` bytes (checked before reading on)."""
    declared = headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        body += message.get("body", b"")
        if len(body) > limit:
            raise BodyTooLarge
        if not message.get("more_body"):
            break
    return bytes(body)


async def respond(
    send: AsgiSend,
    status: int,
    body: bytes = b"",
    headers: list[tuple[str, str]] | None = None,
    content_type: str = "",
) -> None:
    raw_headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers or []]
    if content_type:
        raw_headers.append((b"content-type", content_type.encode()))
    raw_headers.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": raw_headers})
    await send({"type": "http.response.body", "body": body})


async def respond_json(
    send: AsgiSend, status: int, data: Any, headers: list[tuple[str, str]] | None = None
) -> None:
    body = jsonrpc.dumps(data).encode()
    await respond(send, status, body, headers, "application/json")


def host_allowed(host: str | None) -> bool:
    """The `Host` header names the hub: one of ALLOWED_HOSTS, checked as Django checks it.

    Against DNS rebinding: a page on evil.example that resolves to the hub sends
    `Host: evil.example` (and a matching Origin). Requests without a Host pass.
    """
    if not host:
        return True
    allowed = settings.ALLOWED_HOSTS or (
        ["localhost", ".localhost", "127.0.0.1", "[::1]"] if settings.DEBUG else []
    )
    domain, _port = split_domain_port(host)
    return bool(domain) and validate_host(domain, allowed)


def origin_allowed(origin: str | None, host: str | None) -> bool:
    """A browser's `Origin` must be the hub itself or one named in MCP_ALLOWED_ORIGINS.

    Requests without an Origin (non-browser clients) pass; this check exists against
    DNS-rebinding and cross-site pages, which always send one.
    """
    if not origin:
        return True
    if origin in settings.MCP_ALLOWED_ORIGINS:
        return True
    _, _, netloc = origin.partition("://")
    if not netloc or origin == "null":
        return False
    if host and netloc.lower() == host.lower() and host_allowed(host):
        return True
    hostname = netloc.rsplit(":", 1)[0] if not netloc.endswith("]") else netloc
    hostname = hostname.lower()
    for allowed in settings.ALLOWED_HOSTS:
        allowed = allowed.lower()
        if allowed == "*":
            continue
        if hostname == allowed or (allowed.startswith(".") and hostname.endswith(allowed)):
            return True
    return False
