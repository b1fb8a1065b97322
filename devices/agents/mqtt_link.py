"""MCP over MQTT (seed 004): the hub as the client of SOMS-style agents.

An agent announces itself on `mcp/discovery` (`{"agent_id", "capabilities", ...}`); the
worker that receives the announcement (one of a shared group) registers it, owns it,
and lists its tools with `list_tools` on `mcp/{id}/request/list_tools` (or `tools/list`
for agents that declare `"methods": ["tools/list", "tools/call"]`). Answers come back on
`mcp/{id}/response/{request_id}`; the JSON-RPC id inside is authoritative, and duplicate
or late answers find no pending request and are dropped.

Calls reach an agent through the same gateway as WebSocket devices: the owning worker
registers the agent in `agent_channels.local_devices` (for callers in its own process)
and joins the agent's channel-layer group (for callers in other processes).

One worker owns an agent: the one whose session the database recorded last. An agent
announces at boot and again on the hub's birth message, and the two announcements may
reach two workers of the group at once; each, once in the agent's group, and again when
told another took the agent over, lets go unless the database still names its session.
(Letting go on the word alone left both in the group when the word came before the other
had joined, and every call reached the agent twice; or neither, when the words crossed.)

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
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from channels.layers import get_channel_layer

from common.groups import keep_joined, receive_forever
from common.mqtt import topics
from common.storable import storable_text
from devices.agents import agent_channels, selectors
from devices.agents import services as agent_services
from mcp_endpoint import jsonrpc
from mcp_endpoint.client import SOMS, Dialect, McpClient, McpClientError, RemoteError

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


@dataclass(slots=True)
class Link:
    """An agent this worker owns: its MCP client and when it was last heard."""

    agent_id: str
    session_id: str
    client: McpClient
    call_timeout: float
    allowance: float | None  # seconds of silence before it counts as gone
    declared: bool  # the allowance comes from its heartbeat: silence alone decides
    heard: float = field(default_factory=time.monotonic)
    discovery: asyncio.Task[Any] | None = None
    checking: asyncio.Task[bool] | None = None  # a presence check under way

    def silent_for(self) -> float:
        return time.monotonic() - self.heard


class AgentBridge:
    def __init__(
        self, publish: Publish, *, owner: str, default_silence: float, probe_seconds: float = 3.0
    ) -> None:
        self._publish = publish  # paho's publish is thread-safe and does not block
        self.owner = owner  # the worker's client id, the prefix of its agents' sessions
        self.default_silence = default_silence
        self.probe_seconds = probe_seconds
        self._links: dict[str, Link] = {}
        self._announcing: dict[str, asyncio.Lock] = {}
        self._layer: Any = None
        self._channel = ""
        self._tasks: set[asyncio.Task[Any]] = set()

    def _spawn(self, coroutine: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def start(self) -> None:
        """Join the channel layer; agents a previous run of this worker owned are offline
        until they announce again (the hub's birth message asks them to)."""
        self._layer = get_channel_layer()
        self._channel = await self._layer.new_channel()
        await agent_services.amqtt_sessions_ended(self.owner)
        self._spawn(receive_forever(self._layer, self._channel, self._on_message, "mqtt agents"))
        self._tasks.add(
            keep_joined(self._layer, lambda: map(agent_channels.agent_group, self._links), self._channel)
        )
        self._spawn(self._sweep())

    async def stop(self) -> None:
        for agent_id in list(self._links):
            await self._gone(agent_id, "the hub's MQTT worker stopped")
        for task in list(self._tasks):
            task.cancel()

    # --- from the broker ------------------------------------------------------------------

    async def on_announcement(self, announcement: Announcement) -> str | None:
        """Register and discover an announced agent; returns why not, if it was refused.
        Announcements of one agent are handled one at a time (an agent announces at boot and
        again on the hub's birth message, often both at once), so that the session recorded
        in the database is the one whose discovery runs."""
        lock = self._announcing.setdefault(announcement.agent_id, asyncio.Lock())
        async with lock:
            return await self._announced(announcement)

    async def _announced(self, announcement: Announcement) -> str | None:
        agent_id = announcement.agent_id
        session_id = f"{self.owner}:{uuid.uuid4().hex[:16]}"
        agent = await agent_services.amqtt_agent_announced(agent_id, session_id, announcement.details)
        if agent is None:
            return f"agent id '{agent_id}' belongs to a WebSocket agent"
        # Still in the agent's group: the new link joins it again below.
        await self._drop(agent_id, "the agent announced itself again", leave_group=False)
        if not agent.approved:
            return None  # known, waiting for an administrator
        heartbeat = announcement.heartbeat
        silence = heartbeat * HEARTBEATS_OF_SILENCE if heartbeat else self.default_silence
        link = Link(
            agent_id=agent_id,
            session_id=session_id,
            client=McpClient(self._sender(agent_id), dialect=announcement.dialect),
            call_timeout=agent.call_timeout,
            allowance=silence or None,
            declared=bool(heartbeat),
        )
        self._links[agent_id] = link
        agent_channels.local_devices[agent_id] = self._server(agent_id)
        group = agent_channels.agent_group(agent_id)
        # Whoever owned it before (another worker) lets go.
        await self._layer.group_send(
            group, {"type": agent_channels.REPLACED, "agent_id": agent_id, "by": self._channel}
        )
        await self._layer.group_add(group, self._channel)
        if not await self._still_owner(link):
            await self._drop(agent_id, "another hub worker took the agent over")
            return None
        link.discovery = self._spawn(self._discover(link))
        return None

    async def _still_owner(self, link: Link) -> bool:
        return await selectors.aagent_session(link.agent_id) == link.session_id

    async def on_response(self, agent_id: str, request_id: str, payload: bytes) -> None:
        link = self._links.get(agent_id)
        if link is None:
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
        if payload.strip().lower() == b"offline":
            await self._gone(agent_id, "the agent went offline (its last will)")
        elif agent_id in self._links:
            self._links[agent_id].heard = time.monotonic()

    def heard_from(self, device_ids: set[str]) -> None:
        now = time.monotonic()
        for device_id in device_ids:
            link = self._links.get(device_id)
            if link is not None:
                link.heard = now

    # --- the agent's tools ------------------------------------------------------------------

    def _sender(self, agent_id: str) -> Callable[[dict[str, Any]], Coroutine[Any, Any, None]]:
        async def send(message: dict[str, Any]) -> None:
            self._publish(topics.request(agent_id, message["method"]), json.dumps(message))

        return send

    async def _discover(self, link: Link) -> None:
        try:
            tools = await link.client.list_tools()
        except McpClientError as exc:
            if self._links.get(link.agent_id) is not link:
                return  # replaced by its next announcement (each reconnection brings a few), or gone
            logger.warning("agent %s: discovery failed: %s", link.agent_id, exc)
            await agent_services.aagent_discovery_failed(link.agent_id, link.session_id, str(exc))
            return
        await agent_services.aagent_discovered(
            link.agent_id,
            link.session_id,
            server_info={"name": link.agent_id, "transport": "mqtt"},
            capabilities={"mqtt": {"dialect": link.client.dialect.list_tools}},
            tools=tools,
        )

    def _server(
        self, agent_id: str
    ) -> Callable[[str, dict[str, Any], float], Coroutine[Any, Any, dict[str, Any]]]:
        async def serve(tool: str, arguments: dict[str, Any], timeout: float) -> dict[str, Any]:
            link = self._links.get(agent_id)
            if link is not None and link.silent_for() > HEARD_RECENTLY_SECONDS:
                silent = link.silent_for()
                if not await self._check_presence(link):
                    return {
                        "failure": "gone",
                        "message": (
                            f"the agent has been silent for {silent:.0f} s and did not answer a presence "
                            f"check within {self.probe_seconds:g} s, so the call was not sent; it is "
                            "offline until it announces itself again"
                        ),
                    }
            client = link.client if link is not None else None
            return await agent_channels.call_reply(client, agent_id, tool, arguments, timeout)

        return serve

    # --- presence ----------------------------------------------------------------------------

    async def _drop(self, agent_id: str, reason: str, *, leave_group: bool = True) -> Link | None:
        """Forget an agent here (its calls fail now), without changing the database."""
        link = self._links.pop(agent_id, None)
        if link is None:
            return None
        if link.discovery is not None:
            link.discovery.cancel()  # before the close, which would fail it as if the agent had
        link.client.close(reason)
        agent_channels.local_devices.pop(agent_id, None)
        if leave_group:
            await self._layer.group_discard(agent_channels.agent_group(agent_id), self._channel)
        return link

    async def _gone(self, agent_id: str, reason: str) -> None:
        link = await self._drop(agent_id, reason)
        if link is not None:
            logger.info("agent %s: offline: %s", agent_id, reason)
            await agent_services.aagent_disconnected(agent_id, link.session_id)

    async def _sweep(self) -> None:
        while True:
            await asyncio.sleep(SWEEP_SECONDS)
            for link in list(self._links.values()):
                if link.allowance is None or link.silent_for() <= link.allowance:
                    continue
                if link.declared:
                    await self._gone(link.agent_id, f"silent for more than {link.allowance:g} s")
                elif link.checking is None:
                    self._spawn(self._check_presence(link))

    async def _check_presence(self, link: Link) -> bool:
        """Is a silent agent still there? One check at a time per agent, none while it has a
        request in flight; an agent that does not answer in time goes offline."""
        if link.checking is None:
            link.checking = self._spawn(self._ask_presence(link))
        checking = link.checking
        try:
            return await asyncio.shield(checking)
        finally:
            if checking.done() and link.checking is checking:
                link.checking = None

    async def _ask_presence(self, link: Link) -> bool:
        if link.client.pending:
            return True  # busy, perhaps with a long tool: its own timeout will tell
        silent = link.silent_for()
        try:
            await link.client.request(link.client.dialect.list_tools, {}, timeout=self.probe_seconds)
        except RemoteError:
            pass  # an error is an answer
        except McpClientError:
            if self._links.get(link.agent_id) is link:
                wait = self.probe_seconds
                await self._gone(
                    link.agent_id,
                    f"silent for {silent:.0f} s, no answer to a presence check within {wait:g} s",
                )
            return False
        link.heard = time.monotonic()
        return True

    # --- calls from other processes ------------------------------------------------------------

    async def _on_message(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        if kind == agent_channels.CALL:
            self._spawn(self._serve_remote(message))
        elif kind == agent_channels.REPLACED and message.get("by") != self._channel:
            link = self._links.get(str(message.get("agent_id")))
            if (
                link is not None
                and not await self._still_owner(link)
                and self._links.get(link.agent_id) is link
            ):
                await self._drop(link.agent_id, "another hub worker took the agent over")

    async def _serve_remote(self, message: dict[str, Any]) -> None:
        agent_id = str(message.get("agent_id"))
        link = self._links.get(agent_id)
        timeout = message.get("timeout") or (link.call_timeout if link else 30.0)
        reply = await self._server(agent_id)(message["tool"], message.get("arguments") or {}, timeout)
        await self._layer.send(message["reply_to"], {"type": agent_channels.REPLY, **reply})
