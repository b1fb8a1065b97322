"""MCP over WebSocket at `/ws/mcp/`: one JSON-RPC message per text frame, one connection
per session. The token comes as `Authorization: Bearer` or, for clients that cannot set
headers, `?token=`; a bad token or a foreign Origin is refused before the socket opens."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

from channels.consumer import get_handler_name
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings

from mcp_endpoint.auth.tokens import aauthenticate, bearer_token, caller_for
from mcp_endpoint.engine import jsonrpc
from mcp_endpoint.engine.metrics import WEBSOCKET_CONNECTIONS
from mcp_endpoint.engine.protocol import Outgoing
from mcp_endpoint.engine.session import ServerSession
from mcp_endpoint.transports.asgi_http import Request, origin_allowed
from mcp_endpoint.transports.db_upkeep import tidy_connections
from mcp_endpoint.transports.idle import CLOSE_IDLE, IdleWatch
from mcp_endpoint.transports.slots import Slots

INTERFACE = "mcp-ws"
SUBPROTOCOL = "mcp"
# RFC 6455's 1003 (unsupported data) cannot be sent by an application under daphne:
# autobahn only lets it send 1000 or 3000-4999. 4003 mirrors 1003 in the private range.
CLOSE_UNSUPPORTED_DATA = 4003
CLOSE_POLICY_VIOLATION = 4401  # application range: unauthorized
CLOSE_TOO_MANY = 4429  # mirrors HTTP 429
# Open connections of each token in this process (MCP_MAX_SESSIONS_PER_TOKEN).
_open = Slots()


class McpWebSocketConsumer(AsyncWebsocketConsumer):
    session: ServerSession | None = None
    _token: str | None = None
    _hearing_changes = False

    async def connect(self) -> None:
        request = Request.from_scope(self.scope)
        if not origin_allowed(request):
            await self.close(code=4403)
            return
        raw = bearer_token(request.headers.get("authorization"))
        if raw is None:
            tokens = parse_qs(request.query).get("token")
            raw = tokens[0] if tokens else None
        token = await aauthenticate(raw)
        if token is None or token.resource:  # OAuth tokens are for the resource they name: /mcp
            await self.close(code=CLOSE_POLICY_VIOLATION)
            return
        offered = self.scope.get("subprotocols") or []
        await self.accept(subprotocol=SUBPROTOCOL if SUBPROTOCOL in offered else None)
        limit = settings.MCP_MAX_SESSIONS_PER_TOKEN
        if not _open.take(token.pk, limit):
            error = jsonrpc.JsonRpcError(
                jsonrpc.TOO_MANY_SESSIONS,
                f"Too many sessions: this token already has {limit} WebSocket connections open here",
                {"limit": limit},
            )
            await self._send_message(jsonrpc.error_response(None, error))
            await self.close(code=CLOSE_TOO_MANY)
            return
        self._token, self._token_pk = raw, token.pk
        caller = caller_for(token, INTERFACE)
        self.session = ServerSession(caller, self._send_message)
        WEBSOCKET_CONNECTIONS.inc()  # undone in disconnect(), for every connection with a session
        self.session.on_subscribe = self._hear_changes
        self.idle = IdleWatch(settings.MCP_WS_IDLE_SECONDS, lambda: self.close(code=CLOSE_IDLE))
        self.idle.start()

    async def _hear_changes(self) -> None:
        """Join the change groups at the first subscription: a session that subscribes to
        nothing need not be woken by every change the apps announce."""
        if not self._hearing_changes and self.session is not None:
            self._hearing_changes = True
            for group in self.session.resources.change_groups:
                await self.channel_layer.group_add(group, self.channel_name)

    async def dispatch(self, message: dict[str, Any]) -> None:
        """As Channels dispatches, without its hop to close old connections per message
        (`tidy_connections` does it at most once a second, and change events need no
        database). A change event (a type the resource providers announce on) goes to the
        session."""
        if self.session is not None and message["type"] in self.session.resources.change_types:
            if isinstance(message.get("event"), dict):
                await self.session.on_change(message["event"])
            return
        handler = getattr(self, get_handler_name(message), None)
        if handler is None:
            raise ValueError(f"No handler for message type {message['type']}")
        await tidy_connections()
        await handler(message)

    async def _send_message(self, message: Outgoing) -> None:
        await self.send(text_data=jsonrpc.dumps(message))

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        if self.session is None:
            return
        self.idle.heard()
        if text_data is None:
            await self.close(code=CLOSE_UNSUPPORTED_DATA)  # binary frames are not MCP
            return
        # The token is checked on every frame (a remembered verdict, see `tokens`): one
        # revoked or expired while the socket is open stops working within the same bound.
        if await aauthenticate(self._token) is None:
            await self.close(code=CLOSE_POLICY_VIOLATION)
            return
        if len(text_data) > settings.MCP_MAX_MESSAGE_BYTES:
            limit = settings.MCP_MAX_MESSAGE_BYTES
            error = jsonrpc.JsonRpcError(
                jsonrpc.INVALID_REQUEST, f"Invalid Request: message larger than {limit} bytes"
            )
            await self._send_message(jsonrpc.error_response(None, error))
            return
        await self.session.receive(text_data)

    async def disconnect(self, code: int) -> None:
        if self.session is not None:
            WEBSOCKET_CONNECTIONS.dec()
            self.idle.stop()
            _open.give_back(self._token_pk)
            if self._hearing_changes:
                for group in self.session.resources.change_groups:
                    await self.channel_layer.group_discard(group, self.channel_name)
            await self.session.close()
