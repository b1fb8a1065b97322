"""The benchmark's floor: the least an MCP application can do under an ASGI server.

`bench_http.py` runs this next to HomeHub and the SDK under each ASGI server, with the same
flags and the same client. Its calls/s is the most any application could get under that
server with that client (its CPU per call the least it could cost): the server parsing
the request and writing the response, and nothing of MCP but what the client needs
to go on. No application can go below it, so `floor / SDK` is the best ratio any
application could reach against the SDK in that cell.

Per POST it reads the whole body and `json.loads` it, then answers like HomeHub by default
(status 200, `text/event-stream`, the whole answer in one body message with its
Content-Length, as HomeHub writes a lone answer) with one `event: message` event:

- `initialize`: a fixed result, and an `mcp-session-id` header;
- `tools/call`: the same successful result for any tool, under the request's id;
- any other request: a JSON-RPC "method not found" error;
- a notification (no id): 202, empty.

No authentication, no sessions kept (the session id is only handed out), no priming event.
Any other HTTP method gets 405.

    cd bench/peers && ../../.venv/bin/daphne -b 127.0.0.1 -p 8765 bare_asgi:app
    .venv/bin/python -m uvicorn --app-dir bench/peers --port 8765 bare_asgi:app
"""

from __future__ import annotations

import json
import secrets
from typing import Any

PROTOCOL_VERSION = "2025-11-25"
SSE_HEADERS = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
CALL_RESULT = json.dumps(
    {"content": [{"type": "text", "text": "ok"}], "structuredContent": {"ok": True}, "isError": False},
    separators=(",", ":"),
).encode()
METHOD_NOT_FOUND = b'{"code":-32601,"message":"Method not found"}'


def _event(request_id: Any, member: bytes, body: bytes) -> bytes:
    """One SSE `message` event carrying the JSON-RPC response (`member` is result or error)."""
    rid = json.dumps(request_id).encode()
    return b'event: message\ndata: {"jsonrpc":"2.0","id":%s,"%s":%s}\n\n' % (rid, member, body)


def _initialize_result(params: Any) -> bytes:
    requested = params.get("protocolVersion") if isinstance(params, dict) else None
    result = {
        "protocolVersion": requested if isinstance(requested, str) else PROTOCOL_VERSION,
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "bare_asgi", "version": "1"},
    }
    return json.dumps(result, separators=(",", ":")).encode()


async def _plain(send, status: int, body: bytes = b"", content_type: bytes = b"") -> None:
    headers = [(b"content-length", b"%d" % len(body))]
    if content_type:
        headers.append((b"content-type", content_type))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _lifespan(receive, send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


async def app(scope, receive, send) -> None:
    if scope["type"] == "lifespan":
        await _lifespan(receive, send)
        return
    if scope["type"] != "http":
        return
    if scope["method"] != "POST":
        await _plain(send, 405)
        return
    body = b""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    try:
        request = json.loads(body)
    except ValueError:
        error = b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}'
        await _plain(send, 400, error, b"application/json")
        return
    if not isinstance(request, dict) or "id" not in request:
        await _plain(send, 202)  # a notification (or a response): nothing to answer
        return
    headers = SSE_HEADERS
    method = request.get("method")
    if method == "tools/call":
        event = _event(request["id"], b"result", CALL_RESULT)
    elif method == "initialize":
        event = _event(request["id"], b"result", _initialize_result(request.get("params")))
        headers = [*SSE_HEADERS, (b"mcp-session-id", secrets.token_hex(16).encode())]
    else:
        event = _event(request["id"], b"error", METHOD_NOT_FOUND)
    headers = [*headers, (b"content-length", b"%d" % len(event))]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": event})
