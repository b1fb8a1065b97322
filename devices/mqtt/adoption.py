"""Failover in a shared group: the live workers open the sessions of the stopped ones.

What the broker does, measured on Mosquitto 2.0.11 (`bench/measure_mqtt_sessions.py`,
docs/MQTT.md#failover): a shared subscription keeps handing a stopped member's persistent
session its share of the messages, which waits there until that member returns; with a
clean session, or at its session's expiry, that share and whatever the member held
unacknowledged are discarded, never sent to another member. No session setting gives
failover. This does: the sessions persist, and a live worker connects with the stopped
worker's client id. It receives what waited, then (with DUP and the same packet ids, so the
deliveries table recognises what was already stored) what the stopped worker held
unacknowledged, and from then on that session's share. When the stopped worker returns, its
own connection takes the session over (the broker closes the adopter's, which never
reconnects), and its share with it.

Every grouped worker says `online` on `homehub/workers/<group>/<client id>` (retained) when
it connects, and `offline` there is its last will (said on a clean stop too). Every worker
follows those topics, and each stopped worker is adopted by one live worker, the same one
whatever worker computes it (a hash of the stopped worker's id over the sorted live ids).
That one also ends the stopped worker's MQTT agent sessions and asks the agents to announce
themselves again (`homehub/status` `online`), so that a live worker owns them.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections.abc import Callable
from typing import Any

import paho.mqtt.client as mqtt
from asgiref.sync import sync_to_async

from common.mqtt.connection import BrokerConfig, connect, make_client
from common.tasks import Tasks
from devices.agents import services as agent_services
from devices.telemetry.ingest import Ingestor, Source

logger = logging.getLogger(__name__)

ONLINE, OFFLINE = "online", "offline"
REST_SECONDS = 2.0  # after losing an adopted session, before adopting it again
Handle = Callable[[Source, mqtt.MQTTMessage], None]


def adopter_of(stopped: str, live: list[str]) -> str:
    """The live worker that adopts `stopped`: every worker computes the same one."""
    digest = hashlib.sha256(stopped.encode()).digest()
    return sorted(live)[int.from_bytes(digest[:4], "big") % len(live)]


class AdoptedSession:
    """A stopped worker's session, opened under its client id: no will, no reconnection."""

    def __init__(
        self, config: BrokerConfig, handle: Handle, ingestor: Ingestor, ended: Callable[[str], None]
    ) -> None:
        self.client_id = config.client_id
        self.config = config
        self.client = make_client(config, will=None, reconnect=False)
        self.source = Source(config.client_id, self.client.ack)
        self.closing = False
        self.empty = False  # the broker had no session under this id
        self._ingestor = ingestor
        self._ended = ended
        self.client.on_connect = self._on_connect
        self.client.on_disconnect = self._on_disconnect
        self.client.on_message = lambda client, userdata, message: handle(self.source, message)

    def open(self) -> None:
        connect(self.client, self.config)

    def close(self) -> None:
        """Leave the session to the broker (it keeps it) and end paho's thread."""
        self.closing = True
        self.client.disconnect()
        self.client.loop_stop()

    def _on_connect(
        self, client: mqtt.Client, userdata: Any, flags: Any, reason: Any, properties: Any
    ) -> None:
        if reason.is_failure:
            logger.warning("mqtt failover: the broker refused the session of %s: %s", self.client_id, reason)
        elif not flags.session_present:
            logger.info(
                "mqtt failover: the broker holds no session of %s: nothing to take over", self.client_id
            )
            self.empty = True
            client.disconnect()
        else:
            logger.warning("mqtt failover: took over the session of stopped worker %s", self.client_id)

    def _on_disconnect(
        self, client: mqtt.Client, userdata: Any, flags: Any, reason: Any, properties: Any
    ) -> None:
        self._ingestor.connection_lost(self.source)
        if not self.closing:
            self._ended(self.client_id)


class Adoption:
    """This worker's part of the group's failover: the ledger of workers it follows and the
    sessions it holds. Runs on the worker's event loop, except the paho callbacks."""

    def __init__(
        self,
        config: BrokerConfig,
        *,
        handle: Handle,
        ingestor: Ingestor,
        hand_on_agents: Callable[[], None],
    ) -> None:
        self.config = config
        self.me = config.client_id
        self._handle = handle
        self._ingestor = ingestor
        self._hand_on_agents = hand_on_agents  # asks agents to announce again (the hub's birth)
        self.ledger: dict[str, str] = {}
        self.held: dict[str, AdoptedSession] = {}
        self._resting: dict[str, float] = {}
        self._handed_on: set[str] = set()  # stopped workers whose agents were handed on
        self._sessionless: set[str] = set()  # stopped workers the broker holds no session of
        self._rebalancing = asyncio.Lock()
        self._tasks = Tasks("mqtt failover")
        self._loop: asyncio.AbstractEventLoop | None = None
        self.connected = False

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()

    async def on_status(self, client_id: str, payload: bytes) -> None:
        state = payload.decode(errors="replace").strip().lower()
        if client_id == self.me or state not in {ONLINE, OFFLINE}:
            return
        if self.ledger.get(client_id) != state:
            logger.info("mqtt failover: worker %s is %s", client_id, state)
        self.ledger[client_id] = state
        self._sessionless.discard(client_id)
        if state == ONLINE:
            self._handed_on.discard(client_id)
        await self.rebalance()

    async def link(self, connected: bool) -> None:
        """This worker's own broker link changed."""
        self.connected = connected
        if connected:
            await self.rebalance()

    def live(self) -> list[str]:
        return [self.me, *(c for c, state in self.ledger.items() if state == ONLINE)]

    def stopped(self) -> list[str]:
        return [c for c, state in self.ledger.items() if state == OFFLINE]

    def others_online(self) -> bool:
        return any(state == ONLINE for state in self.ledger.values())

    async def rebalance(self) -> None:
        """Adopt the stopped workers this worker is the adopter of; let go of the others."""
        async with self._rebalancing:
            if self.connected:
                await self._rebalance()

    async def _rebalance(self) -> None:
        live = self.live()
        mine = {c for c in self.stopped() if adopter_of(c, live) == self.me} - self._sessionless
        for client_id in sorted(mine - self.held.keys()):
            if self._resting.get(client_id, 0) > time.monotonic():
                continue
            if client_id not in self._handed_on:
                self._handed_on.add(client_id)
                await agent_services.amqtt_sessions_ended(client_id)
                self._hand_on_agents()
            session = AdoptedSession(
                self.config.adopting(client_id), self._handle, self._ingestor, self._session_lost
            )
            self.held[client_id] = session
            session.open()
        for client_id in sorted(self.held.keys() - mine):
            await self._let_go(client_id)

    async def stop(self) -> None:
        self._tasks.cancel()
        for client_id in list(self.held):
            await self._let_go(client_id)

    def adopted(self) -> list[str]:
        return sorted(c for c, s in self.held.items() if not s.empty)

    async def _let_go(self, client_id: str) -> None:
        session = self.held.pop(client_id, None)
        if session is not None:
            await sync_to_async(session.close, thread_sensitive=False)()

    def _session_lost(self, client_id: str) -> None:
        """From paho's thread: the broker closed an adopted session (its worker came back and
        took it over, or the broker went away). Rest a moment, then look again."""
        assert self._loop is not None
        self._loop.call_soon_threadsafe(self._rest, client_id)

    def _rest(self, client_id: str) -> None:
        session = self.held.get(client_id)
        if session is None:
            return
        if session.empty:
            self._sessionless.add(client_id)  # until its worker is heard of again
        else:
            logger.info("mqtt failover: the session of %s was taken back or lost", client_id)
        self._resting[client_id] = time.monotonic() + REST_SECONDS
        self._tasks.spawn(self._after_rest(client_id))

    async def _after_rest(self, client_id: str) -> None:
        session = self.held.pop(client_id, None)
        if session is not None:
            await sync_to_async(session.close, thread_sensitive=False)()
        await asyncio.sleep(REST_SECONDS)
        await self.rebalance()
