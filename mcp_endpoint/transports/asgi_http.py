"""Small helpers for answering raw ASGI HTTP requests without Django's request stack."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from common import origins
from mcp_endpoint.engine import jsonrpc

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


def origin_allowed(request: Request) -> bool:
    """For `/mcp`, `/ws/mcp/` and their CORS: no Origin (no browser), the hub's own origin, or
    one of MCP_ALLOWED_ORIGINS, each compared by scheme, host and port."""
    return origins.origin_allowed(
        request.headers.get("origin"),
        host=request.headers.get("host"),
        scheme=origins.request_scheme(request.scheme, request.headers),
        trusted=settings.MCP_ALLOWED_ORIGINS,
    )
