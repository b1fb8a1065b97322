"""A device link: one session of an ESP32 agent with this hub process, whatever carries its
frames. The lifecycle every device transport shares is written here once; a transport (the
WebSocket consumer, `devices.xiaozhi.websocket`; the MQTT bridge, `devices.soms.link`)
admits its devices its own way, moves their frames and subclasses `DeviceLink`:

- `register()`: record this session online in the database, with the transport's service
  (it returns the agent, or None when the device may not connect);
- `send(payload)`: carry one MCP payload from the hub's `McpClient` to the device (the
  transport hands every payload from the device to `client.feed`);
- `hang_up()`: end the connection because a newer session took the device over (the
  transport then calls `detach`, or `hang_up` does);
- optionally `handshake()` (what precedes `tools/list`: `initialize` unless the transport's
  devices do not implement it) and `before_call()` (refuse a call before it is sent).

What the base does with them:

- `attach()`: register, become this process's link of the agent (an older link of it here
  steps aside at once), tell older sessions elsewhere to step aside (`agent.replaced` on the
  agent's channel-layer group), join that group (where the gateway sends calls from other
  processes); then, if the agent is approved, `discover()`: the handshake
  and `tools/list` through the `McpClient`, recorded in the database;
- `handle(message)`: what the channel layer brings: a forwarded call (`agent.call`, served
  and answered on its `reply_to`), an older-session notice, an approval;
- `serve(tool, arguments, timeout)`: a `CallResult`, or a `CallFailed` raised
  (`devices.agents.outcomes`);
- `step_aside()`: told that a newer session took the device over, hang up, unless the
  database still names this session (the word may come from a session that lost a race);
- `detach(reason)`: calls in flight fail, background work stops, the group is left and the
  session recorded offline (a no-op in the database once a newer session took over).

A stopping server (daphne at SIGTERM) ends its connections without their disconnect:
`detach_all` lets this process's links go on its shutdown path (`homehub/asgi.py`).

Database work goes through the agents' services and selectors, whose async forms follow
`common.tasks`'s rule: writes batched (`common.write_batches`), reads `sync_to_async`.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from abc import ABC, abstractmethod
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import connection

from common.replies import answer
from common.tasks import Tasks, spawn
from devices.agents import agent_channels, limits, selectors
from devices.agents import services as agent_services
from devices.agents.models import Agent
from devices.agents.outcomes import (
    CallFailed,
    CallRefused,
    CallResult,
    DeviceError,
    DeviceGone,
    DeviceTimeout,
    to_wire,
)
from mcp_endpoint.client.mcp_client import (
    MCP,
    ConnectionLost,
    Dialect,
    McpClient,
    McpClientError,
    RemoteError,
    RequestTimeout,
)
from mcp_endpoint.engine.session import SERVER_NAME, SERVER_VERSION

logger = logging.getLogger(__name__)

# This process's links, by agent id (each device's latest session): the gateway calls a
# device connected here directly, without the channel layer.
local_links: dict[str, DeviceLink] = {}


def _client_capabilities() -> dict[str, Any]:
    if not settings.DEVICE_VISION_URL:
        return {}
    return {"vision": {"url": settings.DEVICE_VISION_URL, "token": settings.DEVICE_VISION_TOKEN}}


class DeviceLink(ABC):
    dialect: Dialect = MCP
    speaks_mcp = True  # a transport whose device said otherwise sets it before `attach`

    def __init__(self, agent_id: str, *, layer: Any, channel: str, session_id: str = "") -> None:
        self.agent_id = agent_id
        self.session_id = session_id or uuid.uuid4().hex
        self.layer = layer
        self.channel = channel  # where the agent's group delivers to this link
        self.group = agent_channels.agent_group(agent_id)
        self.approved = False
        self.call_timeout = 30.0
        self.client: McpClient | None = None
        self.tasks = Tasks(f"device {agent_id}")  # they end with the link
        self.notifications = limits.NotificationBudget(agent_id)
        self.discovery: asyncio.Future[None] | None = None
        self.registered = False
        self.joined = False
        self.replaced = False
        self.detached = False

    # --- what a transport implements ------------------------------------------------------------

    @abstractmethod
    async def register(self) -> Agent | None:
        """Record this session online; the agent, or None when the device may not connect."""

    @abstractmethod
    async def send(self, payload: dict[str, Any]) -> None:
        """Carry one MCP payload to the device."""

    @abstractmethod
    async def hang_up(self) -> None:
        """End the connection: a newer session of the device took over."""

    async def handshake(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """What precedes `tools/list`: MCP's `initialize`; the device's server info and capabilities."""
        assert self.client is not None
        init = await self.client.initialize(
            _client_capabilities(), {"name": SERVER_NAME, "version": SERVER_VERSION}
        )
        server_info, capabilities = init.get("serverInfo"), init.get("capabilities")
        return (
            server_info if isinstance(server_info, dict) else {},
            capabilities if isinstance(capabilities, dict) else {},
        )

    async def before_call(self, tool: str) -> None:  # noqa: B027 (optional, unlike the abstract ones)
        """Raise a `CallFailed` to refuse a call before it is sent; nothing by default."""

    # --- the lifecycle ---------------------------------------------------------------------------

    async def attach(self) -> bool:
        """Take the device over for this session; False when refused or already superseded."""
        agent = await self.register()
        if agent is None:
            return False
        self.registered = True
        self.approved, self.call_timeout = agent.approved, agent.call_timeout
        if self.speaks_mcp:
            # Discovery waits the client's default; each tool call waits the agent's call_timeout.
            self.client = McpClient(self.send, on_notification=self._notified, dialect=self.dialect)
        older = local_links.get(self.agent_id)
        local_links[self.agent_id] = self
        if older is not None:
            await older.step_aside()
        await self.layer.group_send(
            self.group,
            {"type": agent_channels.REPLACED, "agent_id": self.agent_id, "session_id": self.session_id},
        )
        self.joined = True
        await self.layer.group_add(self.group, self.channel)
        if self.detached:  # let go while joining
            await self._leave_group()
            return False
        if not await self._current():
            # A newer session registered meanwhile, its word sent before this one joined.
            await self._hang_up()
            return False
        if self.approved:
            self.approve()
        return True

    async def _current(self) -> bool:
        return await selectors.aagent_session(self.agent_id) == self.session_id

    async def step_aside(self) -> None:
        if self.detached or self.replaced or await self._current():
            return
        await self._hang_up()

    async def _hang_up(self) -> None:
        if not (self.replaced or self.detached):
            self.replaced = True
            await self.hang_up()

    def approve(self) -> None:
        self.approved = True
        if self.client is not None and self.discovery is None and not self.detached:
            self.discovery = self.tasks.spawn(self.discover())

    async def discover(self) -> None:
        assert self.client is not None
        try:
            server_info, capabilities = await self.handshake()
            # One past the bound is enough to know the device went beyond it.
            tools = limits.bounded_tools(
                self.agent_id, await self.client.list_tools(most=settings.DEVICE_MAX_TOOLS + 1)
            )
        except McpClientError as exc:
            if self.detached:
                return
            logger.warning("device %s: discovery failed: %s", self.agent_id, exc)
            await agent_services.aagent_discovery_failed(self.agent_id, self.session_id, str(exc))
            return
        await agent_services.aagent_discovered(
            self.agent_id, self.session_id, server_info=server_info, capabilities=capabilities, tools=tools
        )

    async def _notified(self, method: str, params: dict[str, Any]) -> None:
        if not self.notifications.allows():
            return
        await agent_services.arecord_agent_notification(self.agent_id, method, params)

    async def handle(self, message: dict[str, Any]) -> None:
        """A message on the agent's group."""
        kind = message.get("type")
        if kind == agent_channels.CALL:
            # Answered in a task of its own, which outlives the link: the caller is owed an answer.
            spawn(self.answer(message))
        elif kind == agent_channels.REPLACED and message.get("session_id") != self.session_id:
            await self.step_aside()
        elif kind == agent_channels.APPROVED:
            self.approve()

    async def serve(self, tool: str, arguments: dict[str, Any], timeout: float) -> CallResult:
        """Call the device's tool: its answer, or a `CallFailed` saying why there is none."""
        try:
            if self.client is None:
                raise CallRefused.not_mcp(self.agent_id)
            await self.before_call(tool)
            result = await self.client.call_tool(tool, arguments, timeout=timeout)
        except CallFailed:
            raise
        except RequestTimeout:
            raise DeviceTimeout.after(self.agent_id, tool, timeout) from None
        except ConnectionLost:
            raise DeviceGone.during(self.agent_id, tool) from None
        except RemoteError as exc:
            raise DeviceError.answered(self.agent_id, tool, exc.message, exc.code) from None
        except Exception as exc:  # the caller must hear back, whatever went wrong
            logger.exception("device %s: call failed", self.agent_id)
            raise CallFailed.unexpected(self.agent_id, tool, exc) from None
        return CallResult.from_mcp(result)

    async def answer(self, message: dict[str, Any]) -> None:
        """Serve a call another process forwarded, and send it the outcome."""
        timeout = message.get("timeout") or self.call_timeout
        outcome: CallResult | CallFailed
        try:
            outcome = await self.serve(str(message.get("tool")), message.get("arguments") or {}, timeout)
        except CallFailed as failure:
            outcome = failure
        await answer(self.layer, message, {"type": agent_channels.REPLY, **to_wire(outcome)})

    async def detach(self, reason: str) -> None:
        """The session ended (`reason` is what its calls in flight fail with)."""
        if not self.let_go(reason):
            return
        await self._leave_group()
        if self.registered:
            await agent_services.aagent_disconnected(self.agent_id, self.session_id)

    def let_go(self, reason: str) -> bool:
        """What detaching does without waiting; False when already detached."""
        if self.detached:
            return False
        self.detached = True
        self.tasks.cancel()  # discovery before the close, which would fail it as if the device had
        if self.client is not None:
            self.client.close(reason)
        if local_links.get(self.agent_id) is self:
            del local_links[self.agent_id]
        return True

    async def _leave_group(self) -> None:
        successor = local_links.get(self.agent_id)
        if not self.joined or (successor is not None and successor.channel == self.channel):
            return  # its successor here listens on the same channel (the MQTT bridge's): it stays
        await self.layer.group_discard(self.group, self.channel)


def _record_offline(sessions: list[tuple[str, str]]) -> None:
    try:
        for agent_id, session_id in sessions:
            agent_services.agent_disconnected(agent_id, session_id)
    finally:
        connection.close()  # this thread's own connection, opened for this alone


async def detach_all(reason: str) -> None:
    """A stopping server: its links let go, and recorded offline in a thread of their own (a
    request in Django's database thread may be waiting on this very loop)."""
    links = [link for link in list(local_links.values()) if link.let_go(reason)]
    await asyncio.gather(*(link._leave_group() for link in links), return_exceptions=True)
    sessions = [(link.agent_id, link.session_id) for link in links if link.registered]
    if sessions:
        await sync_to_async(_record_offline, thread_sensitive=False)(sessions)
