"""ESP32 devices at `/ws/devices/` (seed 001, xiaozhi-style firmware).

The device opens the socket with `Authorization: Bearer <device token>`, `Device-Id`,
`Client-Id` and `Protocol-Version` headers, says `hello` (with `features.mcp`), and the hub
answers with its own `hello` and a `session_id`. The device is an MCP *server*: the hub
sends `initialize`, walks `tools/list` and records the tools, then forwards tool calls
that the gateway routes to this connection. MCP travels as `{"session_id", "type": "mcp",
"payload"}`; audio (binary frames) and the other message types are not the hub's business
and are ignored, as are frames that are too large or not JSON.

The session's lifecycle (registration, the agent's group, older sessions stepping aside,
discovery, calls, cleanup) is `devices.agents.link`'s; this module admits devices and moves
their frames.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import Any

from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings

from devices.agents import services as agent_services
from devices.agents.link import DeviceLink
from devices.agents.models import Agent
from mcp_endpoint.auth.tokens import bearer_token
from mcp_endpoint.client.mcp_client import McpClient, McpClientError
from mcp_endpoint.engine import jsonrpc
from mcp_endpoint.transports.idle import CLOSE_IDLE, IdleWatch

logger = logging.getLogger(__name__)

HELLO_TIMEOUT = 10.0
# Daphne lets an application close only with 1000 or 3000-4999.
CLOSE_UNAUTHORIZED = 4401
CLOSE_NO_HELLO = 4408
CLOSE_REPLACED = 4409


class WebSocketLink(DeviceLink):
    """A device's session over its socket: MCP payloads in `{"session_id", "type": "mcp",
    "payload"}` text frames."""

    def __init__(self, consumer: DeviceConsumer, agent: Agent, details: dict[str, Any]) -> None:
        super().__init__(agent.agent_id, layer=consumer.channel_layer, channel=consumer.channel_name)
        self.consumer = consumer
        self.agent = agent
        self.details = details

    async def register(self) -> Agent:
        await agent_services.aagent_connected(self.agent_id, self.session_id, self.details)
        return self.agent

    async def send(self, payload: dict[str, Any]) -> None:
        await self.consumer.send(
            text_data=json.dumps({"session_id": self.session_id, "type": "mcp", "payload": payload})
        )

    async def hang_up(self) -> None:
        await self.consumer.close(code=CLOSE_REPLACED)  # its disconnect detaches the link


class DeviceConsumer(AsyncWebsocketConsumer):
    link: WebSocketLink | None = None

    async def connect(self) -> None:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in self.scope["headers"]}
        agent = await agent_services.aadmit_device(
            headers.get("device-id", "").strip(),
            bearer_token(headers.get("authorization")),
            accept_unknown=settings.DEVICES_ACCEPT_UNKNOWN,
        )
        if agent is None:
            await self.close(code=CLOSE_UNAUTHORIZED)  # before accept: the handshake gets a 403
            return
        details = {
            "client_id": headers.get("client-id", ""),
            "protocol_version": headers.get("protocol-version", ""),
        }
        self.link = WebSocketLink(self, agent, details)
        self.said_hello = False
        await self.accept()
        self.hello_timer = self.link.tasks.spawn(self._expect_hello())
        self.idle = IdleWatch(settings.DEVICE_IDLE_SECONDS, lambda: self.close(code=CLOSE_IDLE), self._ping)
        self.idle.start()

    async def _ping(self) -> None:
        """Half-way through a silence: an MCP device answers a ping (the answer is a frame)."""
        if self.link is not None and self.link.client is not None:
            self.link.tasks.spawn(self._ping_quietly(self.link.client))

    @staticmethod
    async def _ping_quietly(client: McpClient) -> None:
        with contextlib.suppress(McpClientError):
            await client.request("ping")

    async def _expect_hello(self) -> None:
        await asyncio.sleep(HELLO_TIMEOUT)
        if not self.said_hello:
            await self.close(code=CLOSE_NO_HELLO)

    # --- frames from the device --------------------------------------------------------------

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        assert self.link is not None
        self.idle.heard()
        if text_data is None:
            return  # audio
        if len(text_data) > settings.DEVICE_MAX_MESSAGE_BYTES:
            logger.warning("device %s: ignoring a %d-byte frame", self.link.agent_id, len(text_data))
            return
        try:
            message = jsonrpc.loads(text_data)
        except ValueError:
            logger.warning("device %s: ignoring a frame that is not JSON", self.link.agent_id)
            return
        if not isinstance(message, dict):
            return
        kind = message.get("type")
        if kind == "hello":
            await self._on_hello(message)
        elif kind == "mcp" and self.link.client is not None:
            await self.link.client.feed(message.get("payload"))

    async def _on_hello(self, message: dict[str, Any]) -> None:
        assert self.link is not None
        await self.send(
            text_data=json.dumps(
                {"type": "hello", "transport": "websocket", "session_id": self.link.session_id}
            )
        )
        if self.said_hello:
            return  # a repeated hello changes nothing
        self.said_hello = True
        self.hello_timer.cancel()
        features = message.get("features")
        self.link.speaks_mcp = isinstance(features, dict) and features.get("mcp") is True
        self.link.details.update(mcp=self.link.speaks_mcp, version=message.get("version"))
        await self.link.attach()

    # --- messages on the agent's group (Channels maps "agent.call" to `agent_call`) -------------

    async def agent_call(self, message: dict[str, Any]) -> None:
        assert self.link is not None
        await self.link.handle(message)

    agent_replaced = agent_approved = agent_call

    async def disconnect(self, code: int) -> None:
        if self.link is None:
            return  # refused before accept
        self.idle.stop()
        await self.link.detach(f"the device disconnected (close code {code})")
