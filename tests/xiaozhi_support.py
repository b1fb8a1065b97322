"""A local WebSocket server playing xiaozhi's MCP endpoint (`wss://api.xiaozhi.me/mcp/?token=…`):
the hub connects to it and it is the MCP *client* on each connection, as the xiaozhi cloud is
for a voice assistant. Connections with another token are refused (HTTP 401), as xiaozhi
refuses them. `in_path`: the token is the URL's last path segment (`/mcp/<token>/`), as some
self-hosted servers have it."""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qs, urlsplit

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.http11 import Request, Response

TOKEN = "eyJhbGciOiJFUzI1NiJ9.xiaozhi-test-secret-token.c2lnbmF0dXJl"
# The server's own log (which names the token it was sent): apart from the hub's.
LOGGER = "tests.xiaozhi"


class FakeXiaozhi:
    def __init__(self, token: str = TOKEN, *, in_path: bool = False) -> None:
        self.token = token
        self.in_path = in_path
        self.connections: asyncio.Queue[ServerConnection] = asyncio.Queue()
        self.accepted = 0
        self.refused = 0
        self.server: Server | None = None
        self.port = 0

    @property
    def url(self) -> str:
        if self.in_path:
            return f"ws://127.0.0.1:{self.port}/mcp/{self.token}/"
        return f"ws://127.0.0.1:{self.port}/mcp/?token={self.token}"

    async def __aenter__(self) -> FakeXiaozhi:
        self.server = await serve(
            self._handle,
            "127.0.0.1",
            self.port,
            process_request=self._check,
            logger=logging.getLogger(LOGGER),
        )
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()
        await self.server.wait_closed()

    def _check(self, connection: ServerConnection, request: Request) -> Response | None:
        parts = urlsplit(request.path)
        if self.in_path:
            given = parts.path.strip("/").rpartition("/")[2]
        else:
            given = parse_qs(parts.query).get("token", [""])[0]
        if given != self.token:
            self.refused += 1
            return connection.respond(HTTPStatus.UNAUTHORIZED, "invalid token\n")
        return None

    async def _handle(self, ws: ServerConnection) -> None:
        self.accepted += 1
        await self.connections.put(ws)
        await ws.wait_closed()

    async def connection(self, timeout: float = 15) -> Client:
        """The hub's next connection."""
        return Client(await asyncio.wait_for(self.connections.get(), timeout))


class Client:
    """The MCP client end of one connection, as xiaozhi drives it."""

    def __init__(self, ws: ServerConnection) -> None:
        self.ws = ws
        self.ids = itertools.count(100)
        self.notifications: list[dict[str, Any]] = []

    async def request(self, method: str, params: dict[str, Any] | None = None, id: Any = None) -> dict:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": next(self.ids) if id is None else id}
        message["method"] = method
        if params is not None:
            message["params"] = params
        await self.ws.send(json.dumps(message))
        return await self.answer(message["id"])

    async def answer(self, id: Any, timeout: float = 10) -> dict:
        while True:
            received = json.loads(await asyncio.wait_for(self.ws.recv(), timeout))
            if "id" in received and received["id"] == id:
                return received
            self.notifications.append(received)

    async def raw(self, frame: str | bytes, timeout: float = 10) -> dict:
        """Send a frame as it is; the first answer."""
        await self.ws.send(frame)
        return json.loads(await asyncio.wait_for(self.ws.recv(), timeout))

    async def initialize(self, id: Any = 1) -> dict:
        """xiaozhi's handshake: `initialize`, then `notifications/initialized`."""
        answer = await self.request(
            "initialize",
            {
                "protocolVersion": "2024-11-05",
                "capabilities": {},
                "clientInfo": {"name": "xiaozhi-mqtt-client", "version": "1.0.0"},
            },
            id=id,
        )
        await self.ws.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        return answer

    async def tool_names(self) -> list[str]:
        answer = await self.request("tools/list", {})
        return [tool["name"] for tool in answer["result"]["tools"]]

    async def call(self, name: str, arguments: dict[str, Any], id: Any = None) -> dict:
        return await self.request("tools/call", {"name": name, "arguments": arguments}, id=id)
