"""MCP over MQTT (seed 004): the hub as the client of SOMS-style agents.

An agent announces itself on `mcp/discovery` (`{"agent_id", "capabilities", ...}`); the
worker that receives the announcement (one of a shared group) registers it, owns it,
and lists its tools with `list_tools` on `mcp/{id}/request/list_tools` (or `tools/list`
for agents that declare `"methods": ["tools/list", "tools/call"]`). Answers come back on
`mcp/{id}/response/{request_id}`; the JSON-RPC id inside is authoritative, and duplicate
or late answers find no pending request and are dropped.

Each agent the worker owns is a `SomsLink`, a `DeviceLink` (devices/agents/link.py): calls
reach it through the same gateway as WebSocket devices, directly from the worker's own
process and through the agent's channel-layer group from others. The links of one worker
share its channel, whose messages the bridge hands to the link of the agent they name.

One worker owns an agent: the one whose session the database recorded last. An agent
announces at boot and again on the hub's birth message, and the two announcements may
reach two workers of the group at once; each, once in the agent's group, and again when
told another took the agent over, lets go unless the database still names its session.
(Letting go on the word alone left both in the group when the word came before the other
had joined, and every call reached the agent twice; or neither, when the words crossed.)
That is `DeviceLink.attach` and `step_aside`, as for every transport.

An agent is offline after its last will (`offline` on `mcp/{id}/status`), or after it has
been silent for three of its declared heartbeats (`"heartbeat": seconds` in its
announcement). One that declares none, silent for `MQTT_AGENT_SILENCE_SECONDS` (60 by
default; anything it sends counts, its telemetry included), is asked whether it is still
there: a presence check, the one request every seed-004 agent answers (its tool list), given
`MQTT_AGENT_PROBE_SECONDS`; no answer, and it is offline. A call to an agent silent for more
than `HEARD_RECENTLY_SECONDS` makes the same check first, so that a call to a board that died
without a last will fails within seconds, saying so, instead of waiting out the call's
timeout. No check is made while the agent has a request in flight (it may be busy with a long
tool, and a board that serves one request at a time would seem gone).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from channels.layers import get_channel_layer

from common.groups import receive_forever
from common.mqtt import topics
from common.replies import answer
from common.storable import storable_text
from common.tasks import Tasks
from devices.agents import agent_channels
from devices.agents import services as agent_services
from devices.agents.link import DeviceLink
from devices.agents.models import Agent
from devices.agents.outcomes import DeviceGone, to_wire
from mcp_endpoint.client.mcp_client import SOMS, Dialect, McpClientError, RemoteError
from mcp_endpoint.engine import jsonrpc

logger = logging.getLogger(__name__)

STANDARD = Dialect(string_ids=True)  # tools/list and tools/call, fresh string ids
HEARTBEATS_OF_SILENCE = 3
SWEEP_SECONDS = 2.0
HEARD_RECENTLY_SECONDS = 10.0  # a call to an agent silent longer checks its presence first
MAX_CAPABILITIES = 50

Publish = Callable[[str, str], None]


class AnnouncementError(ValueError):
    """An announcement the hub will not act on; the text says why."""


@dataclass(frozen=True, slots=True)
class Announcement:
    agent_id: str
    details: dict[str, Any]  # capabilities, methods, heartbeat (what the agent said of itself)

    @property
    def dialect(self) -> Dialect:
        return STANDARD if "tools/list" in self.details.get("methods", []) else SOMS

    @property
    def heartbeat(self) -> float | None:
        return self.details.get("heartbeat")


def parse_announcement(payload: bytes) -> Announcement:
    try:
        body = jsonrpc.loads(payload)
    except ValueError:
        raise AnnouncementError("announcement is not JSON") from None
    if not isinstance(body, dict):
        raise AnnouncementError("announcement is not a JSON object")
    agent_id = body.get("agent_id")
    if not topics.valid_agent_id(agent_id):
        raise AnnouncementError("agent_id must be 1 to 64 of A-Z a-z 0-9 _ -")
    capabilities = body.get("capabilities", [])
    if not isinstance(capabilities, list) or not all(isinstance(c, str) for c in capabilities):
        raise AnnouncementError("capabilities must be a list of strings")
    details: dict[str, Any] = {"capabilities": [storable_text(c) for c in capabilities[:MAX_CAPABILITIES]]}
    methods = body.get("methods")
    if isinstance(methods, list):
        details["methods"] = [storable_text(m) for m in methods if isinstance(m, str)][:10]
    heartbeat = body.get("heartbeat")
    if isinstance(heartbeat, int | float) and not isinstance(heartbeat, bool) and 0 < heartbeat <= 86400:
        details["heartbeat"] = float(heartbeat)
    return Announcement(agent_id, details)


class SomsLink(DeviceLink):
    """An agent this worker owns, under the session of one announcement: requests published on
    `mcp/{id}/request/...`, answers fed in by the bridge, and when it was last heard."""

    def __init__(self, bridge: AgentBridge, announcement: Announcement) -> None:
        super().__init__(
            announcement.agent_id,
            layer=bridge.layer,
            channel=bridge.channel,
            session_id=f"{bridge.owner}:{uuid.uuid4().hex[:16]}",
        )
        self.bridge = bridge
        self.announcement = announcement
        self.dialect = announcement.dialect
        heartbeat = announcement.heartbeat
        silence = heartbeat * HEARTBEATS_OF_SILENCE if heartbeat else bridge.default_silence
        self.allowance = silence or None  # seconds of silence before it counts as gone
        self.declared = bool(heartbeat)  # the allowance comes from its heartbeat: silence alone decides
        self.heard = time.monotonic()
        self.checking: asyncio.Future[bool] | None = None  # a presence check under way

    def silent_for(self) -> float:
        return time.monotonic() - self.heard

    async def register(self) -> Agent | None:
        return await agent_services.amqtt_agent_announced(
            self.agent_id, self.session_id, self.announcement.details
        )

    async def send(self, payload: dict[str, Any]) -> None:
        self.bridge.publish(topics.request(self.agent_id, payload["method"]), json.dumps(payload))

    async def handshake(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """Seed-004 agents have no `initialize`: they are what they announced."""
        return {"name": self.agent_id, "transport": "mqtt"}, {"mqtt": {"dialect": self.dialect.list_tools}}

    async def hang_up(self) -> None:
        await self.detach("another hub worker took the agent over")

    async def before_call(self, tool: str) -> None:
        silent = self.silent_for()
        if silent > HEARD_RECENTLY_SECONDS and not await self.check_presence():
            raise DeviceGone.unreachable(
                self.agent_id,
                tool,
                f"the agent has been silent for {silent:.0f} s and did not answer a presence check "
                f"within {self.bridge.probe_seconds:g} s, so the call was not sent; it is offline "
                "until it announces itself again",
            )

    def let_go(self, reason: str) -> bool:
        if self.bridge.links.get(self.agent_id) is self:
            del self.bridge.links[self.agent_id]
        return super().let_go(reason)

    async def check_presence(self) -> bool:
        """Is this silent agent still there? One check at a time, none while it has a request
        in flight; an agent that does not answer in time goes offline."""
        if self.checking is None:
            self.checking = self.bridge.tasks.spawn(self._ask_presence())
        checking = self.checking
        try:
            return await asyncio.shield(checking)
        finally:
            if checking.done() and self.checking is checking:
                self.checking = None

    async def _ask_presence(self) -> bool:
        assert self.client is not None
        if self.client.pending:
            return True  # busy, perhaps with a long tool: its own timeout will tell
        silent = self.silent_for()
        wait = self.bridge.probe_seconds
        try:
            await self.client.request(self.dialect.list_tools, {}, timeout=wait)
        except RemoteError:
            pass  # an error is an answer
        except McpClientError:
            await self.bridge.gone(
                self, f"silent for {silent:.0f} s, no answer to a presence check within {wait:g} s"
            )
            return False
        self.heard = time.monotonic()
        return True


class AgentBridge:
    def __init__(
        self, publish: Publish, *, owner: str, default_silence: float, probe_seconds: float = 3.0
    ) -> None:
        self.publish = publish  # paho's publish is thread-safe and does not block
        self.owner = owner  # the worker's client id, the prefix of its agents' sessions
        self.default_silence = default_silence
        self.probe_seconds = probe_seconds
        self.links: dict[str, SomsLink] = {}
        self._announcing: dict[str, asyncio.Lock] = {}
        self.layer: Any = None
        self.channel = ""
        self.tasks = Tasks("mqtt agents")

    async def start(self) -> None:
        """Join the channel layer; agents a previous run of this worker owned are offline
        until they announce again (the hub's birth message asks them to)."""
        self.layer = get_channel_layer()
        self.channel = await self.layer.new_channel()
        await agent_services.amqtt_sessions_ended(self.owner)
        self.tasks.spawn(receive_forever(self.layer, self.channel, self._on_message, "mqtt agents"))
        self.tasks.spawn(self._sweep())

    async def stop(self) -> None:
        for link in list(self.links.values()):
            await self.gone(link, "the hub's MQTT worker stopped")
        self.tasks.cancel()

    # --- from the broker ------------------------------------------------------------------

    async def on_announcement(self, announcement: Announcement) -> str | None:
        """Register and discover an announced agent; returns why not, if it was refused.
        Announcements of one agent are handled one at a time (an agent announces at boot and
        again on the hub's birth message, often both at once), so that the session recorded
        in the database is the one whose discovery runs."""
        lock = self._announcing.setdefault(announcement.agent_id, asyncio.Lock())
        async with lock:
            link = SomsLink(self, announcement)
            try:
                attached = await link.attach()
            except agent_services.AgentRefused as refusal:
                return str(refusal)
            if attached:
                self.links[link.agent_id] = link  # before its discovery's first request goes out
            elif not link.registered:
                return f"agent id '{link.agent_id}' belongs to a WebSocket agent"
            return None

    async def on_response(self, agent_id: str, request_id: str, payload: bytes) -> None:
        link = self.links.get(agent_id)
        if link is None or link.client is None:
            return
        try:
            message = jsonrpc.loads(payload)
        except ValueError:
            logger.warning("agent %s: a response that is not JSON", agent_id)
            return
        if isinstance(message, dict) and "id" not in message:
            message["id"] = request_id  # the topic names the request when the body does not
        link.heard = time.monotonic()
        await link.client.feed(message)

    async def on_status(self, agent_id: str, payload: bytes) -> None:
        link = self.links.get(agent_id)
        if link is None:
            return
        if payload.strip().lower() == b"offline":
            await self.gone(link, "the agent went offline (its last will)")
        else:
            link.heard = time.monotonic()

    def heard_from(self, device_ids: set[str]) -> None:
        now = time.monotonic()
        for device_id in device_ids:
            link = self.links.get(device_id)
            if link is not None:
                link.heard = now

    # --- presence ----------------------------------------------------------------------------

    async def gone(self, link: SomsLink, reason: str) -> None:
        if not link.detached:
            logger.info("agent %s: offline: %s", link.agent_id, reason)
            await link.detach(reason)

    async def _sweep(self) -> None:
        while True:
            await asyncio.sleep(SWEEP_SECONDS)
            for link in list(self.links.values()):
                if link.allowance is None or link.silent_for() <= link.allowance:
                    continue
                if link.declared:
                    await self.gone(link, f"silent for more than {link.allowance:g} s")
                elif link.checking is None:
                    self.tasks.spawn(link.check_presence())

    # --- the channel layer ---------------------------------------------------------------------

    async def _on_message(self, message: dict[str, Any]) -> None:
        """A message on the group of one of this worker's agents, for the link of that agent."""
        agent_id = str(message.get("agent_id"))
        link = self.links.get(agent_id)
        if link is not None:
            await link.handle(message)
        elif message.get("type") == agent_channels.CALL:  # the agent left this worker meanwhile
            reply = {"type": agent_channels.REPLY, **to_wire(DeviceGone.offline(agent_id))}
            await answer(self.layer, message, reply)
