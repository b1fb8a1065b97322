"""An MCP client for talking to devices, whatever carries the messages.

The hub is the client of every ESP32 agent (seed 001): it sends `initialize`, walks
`tools/list` page by page and calls tools. The transport gives the client a `send`
coroutine for outgoing JSON-RPC payloads and hands it every incoming payload with
`feed()`; framing (the WebSocket envelope, MQTT topics) stays with the transport.

Written for strict firmware: request ids are integers (a device drops other ids without
answering), only `initialize`, `tools/list` and `tools/call` are sent, error replies may
carry a `message` without a `code` (or be a bare string), and the last page of `tools/list`
has no `nextCursor`. MQTT agents (seed 004) name the methods `list_tools` and `call_tool`
and expect fresh string ids (their answers come back on a topic named by the id): a
`Dialect` says which.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from mcp_endpoint.engine import jsonrpc

logger = logging.getLogger(__name__)

PROTOCOL_VERSION = "2024-11-05"  # what the firmware answers; it ignores the one asked for
DEFAULT_TIMEOUT = 30.0
MAX_TOOL_PAGES = 1000  # a device that pages forever must not hold the hub forever

Send = Callable[[dict[str, Any]], Awaitable[None]]
RequestId = int | str
NotificationHandler = Callable[[str, dict[str, Any]], Awaitable[None]]


class McpClientError(Exception):
    """A request that got no usable answer; the message is meant for people and models."""


class RequestTimeout(McpClientError):
    pass


class ConnectionLost(McpClientError):
    pass


class RemoteError(McpClientError):
    """The peer answered with a JSON-RPC error (`code` is None when it sent none)."""

    def __init__(self, message: str, code: int | None = None, data: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.data = data


def _remote_error(error: Any) -> RemoteError:
    if not isinstance(error, dict):
        return RemoteError(str(error) if error is not None else "Unknown error")
    code = error.get("code")
    message = error.get("message")
    return RemoteError(
        message if isinstance(message, str) and message else "Unknown error",
        code if isinstance(code, int) and not isinstance(code, bool) else None,
        error.get("data"),
    )


@dataclass(frozen=True, slots=True)
class Dialect:
    """How a kind of device names the tool methods and the request ids it accepts."""

    list_tools: str = "tools/list"
    call_tool: str = "tools/call"
    string_ids: bool = False  # integers for xiaozhi firmware; fresh UUIDs over MQTT
    empty_cursor: bool = True  # the first tools/list page asks with cursor "" (seed 001)


MCP = Dialect()
SOMS = Dialect(list_tools="list_tools", call_tool="call_tool", string_ids=True, empty_cursor=False)


class McpClient:
    def __init__(
        self,
        send: Send,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        on_notification: NotificationHandler | None = None,
        dialect: Dialect = MCP,
    ) -> None:
        self._send = send
        self.timeout = timeout
        self._on_notification = on_notification
        self.dialect = dialect
        self._ids = itertools.count(1)
        self._pending: dict[RequestId, asyncio.Future[Any]] = {}
        self._closed: str | None = None

    @property
    def pending(self) -> int:
        return len(self._pending)

    async def request(
        self, method: str, params: dict[str, Any] | None = None, *, timeout: float | None = None
    ) -> Any:
        """Send one request and wait for its result; raises an `McpClientError` otherwise."""
        if self._closed is not None:
            raise ConnectionLost(self._closed)
        request_id: RequestId = uuid.uuid4().hex if self.dialect.string_ids else next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "id": request_id}
        if params is not None:
            message["params"] = params
        limit = self.timeout if timeout is None else timeout
        try:
            await self._send(message)
            return await asyncio.wait_for(future, limit)
        except TimeoutError:
            raise RequestTimeout(f"no answer to '{method}' within {limit:g} s") from None
        finally:
            self._pending.pop(request_id, None)

    async def feed(self, message: Any) -> None:
        """Take one incoming payload: a response settles its request, a notification goes
        to `on_notification`; anything else is logged and dropped."""
        if not isinstance(message, dict):
            logger.debug("ignoring a non-object payload")
            return
        if "method" in message:
            if "id" in message:
                logger.debug("ignoring a request from the device: %s", message.get("method"))
            elif self._on_notification is not None and isinstance(message["method"], str):
                params = message.get("params")
                await self._on_notification(message["method"], params if isinstance(params, dict) else {})
            return
        request_id = message.get("id")
        future = self._pending.get(request_id) if jsonrpc.is_valid_id(request_id) else None
        if future is None or future.done():
            logger.debug("ignoring a response to no pending request: %r", request_id)
            return
        if "error" in message:
            future.set_exception(_remote_error(message["error"]))
        elif "result" in message:
            future.set_result(message["result"])
        else:
            future.set_exception(RemoteError("malformed response: neither result nor error"))

    def close(self, reason: str = "connection closed") -> None:
        """The transport is gone: every waiting request fails now with `reason`."""
        self._closed = reason
        for future in self._pending.values():
            if not future.done():
                future.set_exception(ConnectionLost(reason))

    # --- the three methods a device implements ---------------------------------------------

    async def initialize(self, capabilities: dict[str, Any], client_info: dict[str, Any]) -> dict[str, Any]:
        result = await self.request(
            "initialize",
            {"protocolVersion": PROTOCOL_VERSION, "capabilities": capabilities, "clientInfo": client_info},
        )
        return result if isinstance(result, dict) else {}

    async def list_tools(self, *, most: int | None = None) -> list[dict[str, Any]]:
        """Every tool, following `nextCursor` until a page comes without one (or with ""); with
        `most`, no further page is asked for once that many are in hand."""
        tools: list[dict[str, Any]] = []
        cursor = ""
        seen: set[str] = set()
        for _ in range(MAX_TOOL_PAGES):
            result = await self.request(
                self.dialect.list_tools, {"cursor": cursor} if cursor or self.dialect.empty_cursor else {}
            )
            page = result.get("tools") if isinstance(result, dict) else result  # or a bare list
            if not isinstance(page, list):
                raise RemoteError("malformed tools/list result: 'tools' is not a list")
            tools.extend(t for t in page if isinstance(t, dict) and isinstance(t.get("name"), str))
            next_cursor = result.get("nextCursor") if isinstance(result, dict) else None
            if (
                not next_cursor
                or not isinstance(next_cursor, str)
                or (most is not None and len(tools) >= most)
            ):
                return tools
            if next_cursor in seen:
                raise RemoteError(f"tools/list repeats the cursor {next_cursor!r}")
            seen.add(next_cursor)
            cursor = next_cursor
        raise RemoteError(f"tools/list did not end within {MAX_TOOL_PAGES} pages")

    async def call_tool(
        self, name: str, arguments: dict[str, Any], *, timeout: float | None = None
    ) -> dict[str, Any]:
        result = await self.request(
            self.dialect.call_tool, {"name": name, "arguments": arguments}, timeout=timeout
        )
        if not isinstance(result, dict):
            raise RemoteError("malformed tools/call result: not an object")
        return result
