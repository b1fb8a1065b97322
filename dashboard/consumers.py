"""`/ws/home/`: live updates for the dashboard's pages (logged-in users only).

Joins the channel layer's home group, where `devices.services` announce every change, and
forwards each `home.event` to the browser as one JSON text frame; and the group where the
requests waiting for a person's confirmation change (`{"type": "requests"}`: the page
re-reads its banner and, on the Requests page, its lists).
"""

from __future__ import annotations

from typing import Any

from channels.generic.websocket import AsyncJsonWebsocketConsumer

from common.groups import keep_joined
from devices.audit.changes import CHANGES_GROUP
from mcp_endpoint import jsonrpc
from mcp_endpoint.confirmation import REQUESTS_GROUP

UNAUTHORIZED = 4401
GROUPS = [CHANGES_GROUP, REQUESTS_GROUP]


class HomeConsumer(AsyncJsonWebsocketConsumer):
    joined = False

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=UNAUTHORIZED)
            return
        for group in GROUPS:
            await self.channel_layer.group_add(group, self.channel_name)
        self.joined = True
        self.membership = keep_joined(self.channel_layer, lambda: GROUPS, self.channel_name)
        await self.accept()
        await self.send_json({"type": "hello", "user": user.get_username()})

    async def receive(
        self, text_data: str | None = None, bytes_data: bytes | None = None, **kwargs: Any
    ) -> None:
        """A frame that is not JSON text is ignored (Channels' own would end the socket)."""
        try:
            content = jsonrpc.loads(text_data) if text_data is not None else None
        except ValueError:
            return
        await self.receive_json(content)

    async def disconnect(self, code: int) -> None:
        if self.joined:
            self.membership.cancel()
            for group in GROUPS:
                await self.channel_layer.group_discard(group, self.channel_name)

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        if isinstance(content, dict) and content.get("type") == "ping":
            await self.send_json({"type": "pong"})

    async def home_event(self, message: dict[str, Any]) -> None:
        await self.send_json({"type": "event", "event": message.get("event", {})})

    async def requests_changed(self, message: dict[str, Any]) -> None:
        await self.send_json({"type": "requests"})
