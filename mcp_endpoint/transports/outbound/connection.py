"""MCP over a WebSocket the hub opens itself: an outbound MCP endpoint (xiaozhi's
`wss://…/mcp/?token=…`). The hub connects as the WebSocket client and is the MCP *server* on
the socket: the far side sends `initialize`, `tools/list`, `tools/call` and `ping`, one
JSON-RPC message per text frame, as on `/ws/mcp/`, and each connection is a new session.

A bad frame (binary, not JSON, not JSON-RPC, larger than MCP_MAX_MESSAGE_BYTES) is answered
with a JSON-RPC error and the connection goes on; the WebSocket library itself closes it (1009)
past twice that size, where the message would not even be read. Keeping the connection up
(reconnecting, pings, the status) is `mcp_endpoint.transports.outbound.supervisor`'s work.

The URL holds a secret: the WebSocket library's own log lines (its handshake's request line
names the URL's query at DEBUG level) go through a logger that redacts it.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from django.conf import settings
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from mcp_endpoint.engine import jsonrpc
from mcp_endpoint.engine.protocol import Outgoing
from mcp_endpoint.engine.session import SERVER_VERSION, ServerSession
from mcp_endpoint.engine.tools import Caller
from mcp_endpoint.transports.outbound.endpoint_urls import redact

OPEN_SECONDS = 10.0  # to open the TCP/TLS connection and finish the WebSocket handshake
CLOSE_SECONDS = 1.0  # to close it cleanly before the socket is dropped (the hub stopping waits)

wire_logger = logging.getLogger("mcp_endpoint.transports.outbound.supervisor.wire")


class RedactingLogger(logging.LoggerAdapter[logging.Logger]):
    """The WebSocket library's logger for one endpoint: each message formatted, then its URL's
    secrets redacted."""

    def __init__(self, logger: logging.Logger, url: str) -> None:
        super().__init__(logger, {})
        self.url = url

    def log(self, level: int, msg: object, *args: object, **kwargs: Any) -> None:
        if self.isEnabledFor(level):
            text = str(msg) % args if args else str(msg)
            self.logger.log(level, "%s", redact(text, self.url), **kwargs)

    def process(self, msg: Any, kwargs: MutableMapping[str, Any]) -> tuple[Any, MutableMapping[str, Any]]:
        return msg, kwargs


async def serve_endpoint(
    url: str,
    caller: Caller,
    *,
    on_open: Callable[[], Awaitable[None]],
    on_call: Callable[[], None],
) -> str:
    """Connect to `url` and serve the MCP client at its end until the connection ends; why it
    ended. `on_open` is awaited once the socket is open, `on_call` called for each `tools/call`
    request. Failing to connect raises (OSError, TimeoutError, a websockets exception): their
    messages may quote the URL, so redact them before showing them."""
    max_bytes = settings.MCP_MAX_MESSAGE_BYTES
    ping = settings.MCP_ENDPOINT_PING_SECONDS or None
    async with connect(
        url,
        open_timeout=OPEN_SECONDS,
        close_timeout=CLOSE_SECONDS,
        ping_interval=ping,
        ping_timeout=ping,
        max_size=2 * max_bytes if max_bytes else None,
        user_agent_header=f"HomeHub/{SERVER_VERSION}",
        logger=RedactingLogger(wire_logger, url),
    ) as ws:

        async def send(message: Outgoing) -> None:
            with contextlib.suppress(ConnectionClosed):  # gone: the loop below ends
                await ws.send(jsonrpc.dumps(message))

        await on_open()
        session = ServerSession(caller, send)
        try:
            while True:
                frame = await ws.recv()
                refusal = _refusal(frame, max_bytes)
                if refusal is not None:
                    await send(jsonrpc.error_response(None, refusal))
                    continue
                try:
                    message = jsonrpc.parse(frame)
                except jsonrpc.JsonRpcError as exc:
                    await send(jsonrpc.error_response(None, exc))
                    continue
                for _ in range(_calls_in(message)):
                    on_call()
                await session.receive(message, parsed=True)
        except ConnectionClosed as closed:
            return _why_closed(closed)
        finally:
            await session.close()


def _refusal(frame: str | bytes, max_bytes: int) -> jsonrpc.JsonRpcError | None:
    if isinstance(frame, bytes):
        return jsonrpc.JsonRpcError(
            jsonrpc.INVALID_REQUEST, "Invalid Request: binary frames are not MCP; send JSON-RPC as text"
        )
    if max_bytes and len(frame) * 4 > max_bytes and len(frame.encode()) > max_bytes:
        return jsonrpc.JsonRpcError(
            jsonrpc.INVALID_REQUEST, f"Invalid Request: message larger than {max_bytes} bytes"
        )
    return None


def _calls_in(message: Any) -> int:
    """How many `tools/call` requests a message (or batch) carries."""
    items = message if isinstance(message, list) else [message]
    return sum(
        1 for item in items if isinstance(item, dict) and item.get("method") == "tools/call" and "id" in item
    )


def _why_closed(closed: ConnectionClosed) -> str:
    if closed.rcvd is not None:
        who = "the endpoint closed the connection"
    elif closed.sent is not None:
        who = "the hub closed the connection"  # an unanswered ping, a message too large
    else:
        who = "the connection was lost"
    return f"{who} ({closed})"
