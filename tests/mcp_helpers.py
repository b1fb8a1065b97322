"""Drive a ServerSession in-process, the way a transport would."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

from mcp_endpoint.engine.registry import ToolRegistry, registry
from mcp_endpoint.engine.session import ServerSession
from mcp_endpoint.engine.tools import Caller, Tool

ALL = frozenset({"read", "control", "fel", "devices"})
LEGACY_INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}}
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


class ToolSet:
    """A `ToolProvider` of a test's own tools, for the hub's registry (the `extra_tools`
    fixture adds it for the test and removes it after)."""

    def __init__(self) -> None:
        self._tools: dict[str, Tool] = {}

    def register(self, tool: Tool) -> Tool:
        self._tools[tool.name] = tool
        return tool

    def tools(self) -> Iterable[Tool]:
        return self._tools.values()

    def tool(self, name: str) -> Tool | None:
        return self._tools.get(name)


def tool_on(target: ToolRegistry | ToolSet, **options: Any) -> Callable[[Callable], Callable]:
    """`@tool(...)` for a test's own registry or tool set (options of `Tool.from_function`)."""

    def decorate(func: Callable) -> Callable:
        target.register(Tool.from_function(func, **options))
        return func

    return decorate


class Peer:
    """A client end: collects what the session sends."""

    def __init__(self, scopes=ALL, tools: ToolRegistry = registry) -> None:
        self.sent: list[dict[str, Any]] = []
        self.session = ServerSession(
            Caller("tester", "mcp-stdio", frozenset(scopes)), self._send, tools=tools
        )

    async def _send(self, message: dict[str, Any]) -> None:
        self.sent.append(message)

    async def request(self, method: str, params: dict | None = None, id: int = 1) -> dict:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            message["params"] = params
        return await self.session.handle(message)

    async def initialize(self, version: str = "2025-11-25") -> dict:
        return await self.request("initialize", {"protocolVersion": version, "capabilities": {}}, id=0)

    async def call(self, name: str, arguments: Any = None, id: int = 1, **params: Any) -> dict:
        return await self.request("tools/call", {"name": name, "arguments": arguments, **params}, id=id)

    async def wait_for(self, predicate, timeout: float = 5.0) -> dict:
        async def poll():
            while True:
                for message in self.sent:
                    if predicate(message):
                        return message
                await asyncio.sleep(0.01)

        return await asyncio.wait_for(poll(), timeout)


def call(name: str, arguments: dict, id: int | str = 2) -> dict:
    """A `tools/call` request."""
    return {
        "jsonrpc": "2.0",
        "id": id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


@contextlib.asynccontextmanager
async def sdk_client(base: str, token: str, *, timeout: float = 10, **options: Any) -> AsyncIterator[Any]:
    """The official SDK's `Client` of a live hub's `/mcp`, over Streamable HTTP with `token`
    (`options`: the Client's own, e.g. `mode`, `elicitation_callback`)."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=timeout)
    async with http, Client(streamable_http_client(base + "/mcp", http_client=http), **options) as client:
        yield client
