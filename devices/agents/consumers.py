"""ESP32 devices at `/ws/devices/` (seed 001, xiaozhi-style firmware).

The device opens the socket with `Authorization: Bearer <device token>`, `Device-Id`,
`Client-Id` and `Protocol-Version` headers, says `hello` (with `features.mcp`), and the hub
answers with its own `hello` and a `session_id`. The device is an MCP *server*: the hub
sends `initialize`, walks `tools/list` and records the tools, then forwards tool calls
that the gateway routes to this connection. MCP travels as `{"session_id", "type": "mcp",
"payload"}`; audio (binary frames) and the other message types are not the hub's business
and are ignored, as are frames that are too large or not JSON.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import logging
import uuid
from collections.abc import Coroutine
from typing import Any

from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings

from common.groups import keep_joined
from devices.agents import agent_channels
from devices.agents import services as agent_services
from mcp_endpoint import jsonrpc
from mcp_endpoint.client import McpClient, McpClientError
from mcp_endpoint.session import SERVER_NAME, SERVER_VERSION
from mcp_endpoint.tokens import bearer_token
from mcp_endpoint.transports.idle import CLOSE_IDLE, IdleWatch

logger = logging.getLogger(__name__)

HELLO_TIMEOUT = 10.0
# Daphne lets an application close only with 1000 or 3000-4999.
CLOSE_UNAUTHORIZED = 4401
CLOSE_NO_HELLO = 4408
CLOSE_REPLACED = 4409

# Tasks outlive the consumer that started them (a call still owes its caller an answer
# after the socket closed); asyncio keeps only weak references to tasks.
_tasks: set[asyncio.Task[Any]] = set()


def _spawn(coroutine: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
    task = asyncio.ensure_future(coroutine)
    _tasks.add(task)
    task.add_done_callback(_tasks.discard)
    return task


# Devices that said hello here and have not disconnected: (agent id, session id).
_connected: set[tuple[str, str]] = set()


@atexit.register
def _devices_gone() -> None:
    """A stopping server (daphne at SIGTERM) ends its connections without their disconnect:
    this process's devices go offline as it exits, not when another process notices."""
    for agent_id, session_id in list(_connected):
        try:
            agent_services.agent_disconnected(agent_id, session_id)
        except Exception:
            logger.exception("device %s: could not record its disconnection at exit", agent_id)


def _client_capabilities() -> dict[str, Any]:
    if not settings.DEVICE_VISION_URL:
        return {}
    return {"vision": {"url": settings.DEVICE_VISION_URL, "token": settings.DEVICE_VISION_TOKEN}}


class DeviceConsumer(AsyncWebsocketConsumer):
    agent_id = ""
    session_id = ""
    approved = False
    client: McpClient | None = None

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
        self.agent_id = agent.agent_id
        self.approved = agent.approved
        self.call_timeout = agent.call_timeout
        self.details = {
            "client_id": headers.get("client-id", ""),
            "protocol_version": headers.get("protocol-version", ""),
        }
        self.session_id = uuid.uuid4().hex
        self.said_hello = False
        self.discovery: asyncio.Task[Any] | None = None
        await self.accept()
        self.hello_timer = _spawn(self._expect_hello())
        self.idle = IdleWatch(settings.DEVICE_IDLE_SECONDS, lambda: self.close(code=CLOSE_IDLE), self._ping)
        self.idle.start()

    async def _ping(self) -> None:
        """Half-way through a silence: an MCP device answers a ping (the answer is a frame)."""
        if self.client is not None:
            _spawn(self._ping_quietly(self.client))

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
        self.idle.heard()
        if text_data is None:
            return  # audio
        if len(text_data) > settings.DEVICE_MAX_MESSAGE_BYTES:
            logger.warning("device %s: ignoring a %d-byte frame", self.agent_id, len(text_data))
            return
        try:
            message = jsonrpc.loads(text_data)
        except ValueError:
            logger.warning("device %s: ignoring a frame that is not JSON", self.agent_id)
            return
        if not isinstance(message, dict):
            return
        kind = message.get("type")
        if kind == "hello":
            await self._on_hello(message)
        elif kind == "mcp" and self.client is not None:
            await self.client.feed(message.get("payload"))

    async def _on_hello(self, message: dict[str, Any]) -> None:
        await self.send(
            text_data=json.dumps({"type": "hello", "transport": "websocket", "session_id": self.session_id})
        )
        if self.said_hello:
            return  # a repeated hello changes nothing
        self.said_hello = True
        self.hello_timer.cancel()
        features = message.get("features")
        mcp = isinstance(features, dict) and features.get("mcp") is True
        await agent_services.aagent_connected(
            self.agent_id, self.session_id, {**self.details, "mcp": mcp, "version": message.get("version")}
        )
        _connected.add((self.agent_id, self.session_id))
        group = agent_channels.agent_group(self.agent_id)
        # An older connection of the same device (not yet noticed as gone) steps aside.
        await self.channel_layer.group_send(group, {"type": agent_channels.REPLACED})
        await self.channel_layer.group_add(group, self.channel_name)
        self.membership = keep_joined(self.channel_layer, lambda: [group], self.channel_name)
        agent_channels.local_devices[self.agent_id] = self.serve
        if mcp:
            # Discovery waits the client's default; each tool call waits the agent's call_timeout.
            self.client = McpClient(self._send_mcp, on_notification=self._notified)
            if self.approved:
                self.discovery = _spawn(self._discover())

    async def _send_mcp(self, payload: dict[str, Any]) -> None:
        await self.send(
            text_data=json.dumps({"session_id": self.session_id, "type": "mcp", "payload": payload})
        )

    async def _notified(self, method: str, params: dict[str, Any]) -> None:
        await agent_services.arecord_agent_notification(self.agent_id, method, params)

    async def _discover(self) -> None:
        assert self.client is not None
        try:
            init = await self.client.initialize(
                _client_capabilities(), {"name": SERVER_NAME, "version": SERVER_VERSION}
            )
            tools = await self.client.list_tools()
        except McpClientError as exc:
            logger.warning("device %s: discovery failed: %s", self.agent_id, exc)
            await agent_services.aagent_discovery_failed(self.agent_id, self.session_id, str(exc))
            return
        server_info, capabilities = init.get("serverInfo"), init.get("capabilities")
        await agent_services.aagent_discovered(
            self.agent_id,
            self.session_id,
            server_info=server_info if isinstance(server_info, dict) else {},
            capabilities=capabilities if isinstance(capabilities, dict) else {},
            tools=tools,
        )

    # --- messages from the channel layer -------------------------------------------------------

    async def agent_call(self, message: dict[str, Any]) -> None:
        """A tool call routed here by the gateway; answered on `reply_to` in its own task,
        so that the device's replies keep flowing in meanwhile."""
        _spawn(self._serve_call(message))

    async def _serve_call(self, message: dict[str, Any]) -> None:
        timeout = message.get("timeout") or self.call_timeout
        reply = await self.serve(message["tool"], message.get("arguments") or {}, timeout)
        await self.channel_layer.send(message["reply_to"], {"type": agent_channels.REPLY, **reply})

    async def serve(self, tool: str, arguments: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Call the device: `{"result": ...}`, or `{"failure": ..., ...}` saying why not."""
        return await agent_channels.call_reply(self.client, self.agent_id, tool, arguments, timeout)

    async def agent_approved(self, message: dict[str, Any]) -> None:
        self.approved = True
        if self.client is not None and self.discovery is None:
            self.discovery = _spawn(self._discover())

    async def agent_replaced(self, message: dict[str, Any]) -> None:
        await self.close(code=CLOSE_REPLACED)

    async def disconnect(self, code: int) -> None:
        if not self.session_id:
            return  # refused before accept
        self.hello_timer.cancel()
        self.idle.stop()
        if self.discovery is not None:
            self.discovery.cancel()
        if self.client is not None:
            self.client.close(f"the device disconnected (close code {code})")
        if agent_channels.local_devices.get(self.agent_id) == self.serve:
            del agent_channels.local_devices[self.agent_id]
        if self.said_hello:
            self.membership.cancel()
            await self.channel_layer.group_discard(
                agent_channels.agent_group(self.agent_id), self.channel_name
            )
            await agent_services.aagent_disconnected(self.agent_id, self.session_id)
            _connected.discard((self.agent_id, self.session_id))
