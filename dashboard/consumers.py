"""`/ws/home/`: live updates for the dashboard's pages (logged-in users only).

Joins the channel layer's home group, where `devices.services` announce every change, and
forwards each `home.event` to the browser as one JSON text frame.
"""

from __future__ import annotations

from typing import Any

from channels.generic.websocket import AsyncJsonWebsocketConsumer

from common.groups import keep_joined
from devices.audit.changes import CHANGES_GROUP
from mcp_endpoint import jsonrpc

UNAUTHORIZED = 4401


class HomeConsumer(AsyncJsonWebsocketConsumer):
    joined = False

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=UNAUTHORIZED)
            return
        await self.channel_layer.group_add(CHANGES_GROUP, self.channel_name)
        self.joined = True
        self.membership = keep_joined(self.channel_layer, lambda: [CHANGES_GROUP], self.channel_name)
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
            await self.channel_layer.group_discard(CHANGES_GROUP, self.channel_name)

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        if isinstance(content, dict) and content.get("type") == "ping":
            await self.send_json({"type": "pong"})

    async def home_event(self, message: dict[str, Any]) -> None:
        await self.send_json({"type": "event", "event": message.get("event", {})})
