"""What the MCP engine and its handler mixins share: the protocol revisions served, the
`_meta` keys of the stateless revision, the state a handshake-era session keeps and the
request context every handler gets.

Kept apart from `session` so that the modules `ServerSession` is built from
(`session_resources`, `session_requests`) and the transports can use them without
importing the engine itself.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from mcp_endpoint.engine import jsonrpc
from mcp_endpoint.engine.input_rounds import InputRounds
from mcp_endpoint.engine.jsonrpc import JsonRpcError

HANDSHAKE_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")  # newest first
STATELESS_VERSIONS = ("2026-07-28",)
SUPPORTED_VERSIONS = (*STATELESS_VERSIONS, *HANDSHAKE_VERSIONS)
BATCH_VERSION = "2025-03-26"  # the only revision whose transports require JSON-RPC batches

META_PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
META_LOG_LEVEL = "io.modelcontextprotocol/logLevel"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"

LIST_TTL_MS = 60_000

Send = Callable[[dict[str, Any]], Awaitable[None]]
# What a session hands its transport: one message, or the answers to a batch (one JSON array).
Outgoing = dict[str, Any] | list[dict[str, Any]]
SendOutgoing = Callable[[Outgoing], Awaitable[None]]
CloseStream = Callable[[], Awaitable[None]]


@dataclass
class SessionState:
    """What the handshake era remembers between requests (serialisable, so an HTTP
    session can live in the database and be served by any process)."""

    initialized: bool = False
    protocol_version: str | None = None
    client_info: dict[str, Any] = field(default_factory=dict)
    client_capabilities: dict[str, Any] = field(default_factory=dict)
    log_level: str | None = None  # no log notifications until the client asks with logging/setLevel
    subscriptions: list[str] = field(default_factory=list)  # resource URIs


@dataclass
class RequestContext:
    """One request as the handlers see it."""

    request_id: jsonrpc.RequestId
    method: str
    params: dict[str, Any]
    notify: Send
    stateless: bool
    log_level: str | None
    close_stream: CloseStream | None = None
    input_rounds: InputRounds | None = None  # a stateless tools/call's or prompts/get's answers so far

    @property
    def progress_token(self) -> Any:
        meta = self.params.get("_meta")
        return meta.get("progressToken") if isinstance(meta, dict) else None


def stateless_meta(params: Any) -> dict[str, Any]:
    """The `_meta` of a 2026-07-28 request, which must carry the protocol version and the
    client's capabilities: -32602 (Invalid params) when it is missing or lacks either, whatever
    the routing headers say (a header cannot stand in for what the body must carry)."""
    meta = params.get("_meta") if isinstance(params, dict) else None
    if (
        not isinstance(meta, dict)
        or not isinstance(meta.get(META_PROTOCOL_VERSION), str)
        or not isinstance(meta.get(META_CLIENT_CAPABILITIES), dict)
    ):
        raise JsonRpcError(
            jsonrpc.INVALID_PARAMS,
            "Invalid params: params._meta must carry the protocol version and the client "
            f"capabilities ('{META_PROTOCOL_VERSION}', '{META_CLIENT_CAPABILITIES}')",
        )
    return meta


def cacheable(ctx: RequestContext, result: dict[str, Any], ttl: int = LIST_TTL_MS) -> dict[str, Any]:
    """2026-07-28 asks for caching hints on list and read results."""
    if ctx.stateless:
        result["ttlMs"] = ttl
        result["cacheScope"] = "private"
    return result
