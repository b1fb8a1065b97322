"""The device listener: where stock xiaozhi devices in MQTT mode connect (`serve` runs it when
DEVICE_MQTT_ENDPOINT is set).

Stock firmware publishes everything on one topic and never subscribes: it relies on the broker
to deliver the server's messages to it. Mosquitto has no way to subscribe a client on its
behalf, so the listener is an embedded amqtt broker (an asyncio MQTT 3.1.1 broker, run in the
hub's own event loop) with plugins (`plugins.py`):

- authentication by per-device credentials (`credentials.py`), and an ACL: a device publishes
  on its own `publish_topic` only, and subscribes to and receives its own deliveries only;
- when a device connects, the listener subscribes it to its delivery topic and makes its
  `MqttLink` (`link.py`), which initializes it and lists its tools, as every device
  transport does (`devices.agents.link`); what it publishes goes to that link; what the hub
  sends it is published on its delivery topic, which only it reads.

In front of the broker stands a gate (amqtt's "external" listener: the hub accepts the TCP
connections and hands each to the broker), for two things amqtt 0.12.1 does not do itself:

- it reads the CONNECT with amqtt's own packet decoder and checks the credentials *before*
  the broker sees the connection, then hands the broker the same bytes. The broker looks up
  the client id's session, and takes it over from a connected client, before it
  authenticates: a connection with another device's client id and a wrong password would
  otherwise cut that device off (a persistent-session attempt disconnects it, a clean-session
  one leaves it connected but receiving nothing). It also refuses a CONNECT that carries a
  last will: amqtt publishes a will without the ACL's publish check, so a device's will aimed
  at another device's delivery topic would reach that device (a forged `tools/call` past every
  check of the hub's); stock firmware sets none;
- it notes when each connection last sent anything (pings included) and closes one silent
  for 1.5 times its keepalive (the broker reads with a timeout, and does nothing when it
  expires), so a device that vanished without closing its connection goes offline.

Only the process running the listener holds these links; the gateway of any other process
reaches them through their agents' channel-layer groups, as for WebSocket devices.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from typing import Any

from amqtt.adapters import StreamReaderAdapter, StreamWriterAdapter
from amqtt.broker import Broker
from amqtt.contexts import Action
from amqtt.mqtt.connack import (
    BAD_USERNAME_PASSWORD,
    NOT_AUTHORIZED,
    UNACCEPTABLE_PROTOCOL_VERSION,
    ConnackPacket,
)
from amqtt.mqtt.connect import ConnectPacket
from amqtt.mqtt.constants import QOS_0
from amqtt.mqtt.packet import CONNECT, MQTTFixedHeader
from amqtt.session import Session
from django.conf import settings

from common.groups import channel_layer, receive_forever
from common.replies import answer
from common.tasks import Tasks
from devices.agents import agent_channels
from devices.agents.outcomes import DeviceGone, to_wire
from devices.xiaozhi.mqtt import credentials
from devices.xiaozhi.mqtt.credentials import Address, Identity
from devices.xiaozhi.mqtt.link import MqttLink

logger = logging.getLogger(__name__)

LISTENER = "default"  # the broker's one listener, external: the gate's
MQTT_3_1_1 = 4
CONNECT_SECONDS = 10.0  # a connection that has not sent its CONNECT by then is closed
MAX_CONNECT_BYTES = 4096  # a CONNECT is a few hundred bytes: larger ones are not read
SWEEP_SECONDS = 1.0
SILENCE_KEEPALIVES = 1.5  # MQTT's own allowance


class GateReader(StreamReaderAdapter):
    """The device's bytes, for the gate and then the broker: what the gate read of the CONNECT
    is kept and read again by the broker; every read notes when the device was last heard."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        super().__init__(reader)
        self.heard = time.monotonic()
        self.kept = bytearray()
        self.keeping = True

    async def read(self, n: int = -1) -> bytes:
        if not self.keeping and self.kept:
            size = len(self.kept) if n < 0 else min(n, len(self.kept))
            head = bytes(self.kept[:size])
            del self.kept[:size]
            return head if n < 0 or size == n else head + await self.read(n - size)
        data = await super().read(n)
        self.heard = time.monotonic()
        if self.keeping:
            self.kept += data
        return data

    def replay(self) -> None:
        """From now on, the bytes kept come first."""
        self.keeping = False


class DeviceConnection:
    """One TCP connection of an admitted device."""

    def __init__(
        self,
        listener: DeviceListener,
        identity: Identity,
        keepalive: int,
        gate: GateReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        self.listener = listener
        self.identity = identity
        self.keepalive = keepalive
        self.gate = gate
        self.writer = writer
        self.peer: tuple[Any, ...] = tuple(writer.get_extra_info("peername") or ())[:2]
        self.session: Session | None = None  # the broker's, once it accepted the connection
        self.link: MqttLink | None = None
        self.inbox: asyncio.Queue[bytes] = asyncio.Queue()  # what it published, in order
        self.ending = "the device disconnected"

    def silent_for(self) -> float:
        return time.monotonic() - self.gate.heard

    @property
    def allowance(self) -> float:
        """Seconds of silence after which it counts as gone: 1.5 keepalives, or without a
        keepalive (0: none, says MQTT) DEVICE_IDLE_SECONDS."""
        return self.keepalive * SILENCE_KEEPALIVES if self.keepalive else settings.DEVICE_IDLE_SECONDS

    async def deliver(self, message: dict[str, Any]) -> None:
        """Publish a message to the device, on the topic only it may read."""
        data = json.dumps(message, separators=(",", ":")).encode()
        await self.listener.publish(self.identity.delivery_topic, data)

    def close(self, reason: str) -> None:
        """End the connection (the broker sees it closed, then the gate detaches the link)."""
        if not self.writer.is_closing():
            self.ending = reason
            self.writer.close()

    async def serve(self) -> None:
        """Hand what the device publishes to its link, one message at a time."""
        assert self.link is not None
        while True:
            await self.link.receive(await self.inbox.get())


class DeviceListener:
    def __init__(self, address: Address) -> None:
        self.address = address
        self.connections: set[DeviceConnection] = set()
        self.current: dict[str, DeviceConnection] = {}  # client id -> its connection the broker accepted last
        self.links: dict[str, MqttLink] = {}  # agent id -> link, for the channel layer's messages
        self.layer: Any = None
        self.channel = ""
        self.broker: Broker | None = None
        self.server: asyncio.Server | None = None
        self.tasks = Tasks("device listener")

    @classmethod
    def from_settings(cls) -> DeviceListener | None:
        """The listener DEVICE_MQTT_ENDPOINT asks for, or None (raises `EndpointError`)."""
        address = credentials.listen_address()
        return None if address is None else cls(address)

    async def start(self) -> None:
        self.layer = channel_layer()
        self.channel = await self.layer.new_channel()
        self.tasks.spawn(receive_forever(self.layer, self.channel, self._on_layer_message, "device listener"))
        options = {"listener": self}
        self.broker = Broker(
            {
                "listeners": {LISTENER: {"type": "external"}},
                "plugins": {
                    "devices.xiaozhi.mqtt.plugins.DeviceAuth": options,
                    "devices.xiaozhi.mqtt.plugins.DeviceTopics": options,
                    "devices.xiaozhi.mqtt.plugins.DeviceEvents": options,
                },
            }
        )
        await self.broker.start()
        self.server = await asyncio.start_server(
            self._accept, self.address.host, self.address.port, reuse_address=True
        )
        self.tasks.spawn(self._sweep())
        logger.info("device listener: MQTT on %s", self.address)

    async def stop(self) -> None:
        if self.server is not None:
            self.server.close()
        for connection in list(self.connections):
            connection.close("the hub is stopping")
        if self.broker is not None:
            with contextlib.suppress(Exception):  # a stop must not fail the shutdown path
                await self.broker.shutdown()
        self.tasks.cancel()

    # --- the gate --------------------------------------------------------------------------------

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            connection = await self._admit(reader, writer)
        except Exception as exc:  # whatever a stranger sends, the gate closes
            logger.info("device listener: refused %s: %r", writer.get_extra_info("peername"), exc)
            connection = None
        if connection is None:
            writer.close()
            return
        self.connections.add(connection)
        try:
            assert self.broker is not None
            await self.broker.external_connected(connection.gate, StreamWriterAdapter(writer), LISTENER)
        finally:
            self.connections.discard(connection)
            writer.close()
            await self._ended(connection)

    async def _admit(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> DeviceConnection | None:
        """Read the CONNECT (amqtt's decoder) and check its credentials; a refused device is
        told why (CONNACK), and the broker never sees it."""
        gate = GateReader(reader)
        async with asyncio.timeout(CONNECT_SECONDS):
            header = await MQTTFixedHeader.from_stream(gate)
            if header is None or header.packet_type != CONNECT:
                raise ValueError("the first packet is not a CONNECT")
            if header.remaining_length > MAX_CONNECT_BYTES:
                raise ValueError(f"a CONNECT of {header.remaining_length} bytes")
            connect = await ConnectPacket.from_stream(gate, fixed_header=header)
        identity = None
        refusal = UNACCEPTABLE_PROTOCOL_VERSION
        if connect.proto_level == MQTT_3_1_1:
            identity = await credentials.aidentify(
                connect.client_id or "", connect.username, connect.password
            )
            refusal = BAD_USERNAME_PASSWORD
        if identity is not None and connect.will_flag:
            # amqtt publishes a will without asking the ACL: a device's will on another's
            # delivery topic would command it. Stock firmware sets none, and the hub sees a
            # device go without one, so no will is accepted, wherever it aims.
            identity, refusal = None, NOT_AUTHORIZED
        if identity is None:
            logger.info(
                "device listener: refused client id %r from %s (CONNACK code %d%s)",
                connect.client_id,
                writer.get_extra_info("peername"),
                refusal,
                ": the CONNECT carries a last will" if refusal == NOT_AUTHORIZED else "",
            )
            await ConnackPacket.build(0, refusal).to_stream(StreamWriterAdapter(writer))
            return None
        gate.replay()
        return DeviceConnection(self, identity, connect.keep_alive, gate, writer)

    # --- from the broker (plugins.py) ------------------------------------------------------------

    def admits(self, session: Session) -> bool:
        """The broker's own check: the gate admitted these very credentials."""
        return any(
            connection.identity.matches(session.client_id, session.username, session.password)
            for connection in self.connections
        )

    def allows(self, session: Session | None, topic: str | None, action: Any) -> bool:
        identity = self._admitted(session)
        if identity is None or topic is None:
            return False
        if action == Action.PUBLISH:
            return topic == identity.publish_topic
        return topic == identity.delivery_topic  # subscribe and receive

    def _admitted(self, session: Session | None) -> Identity | None:
        for connection in self.connections:
            if session is not None and connection.identity.client_id == session.client_id:
                return connection.identity
        return None

    async def on_connected(self, client_id: str, session: Session) -> None:
        """The broker accepted the connection: subscribe the device to its deliveries, then take
        it over for the hub (its link initializes it and lists its tools)."""
        connection = self._connection_of(client_id, session)
        if connection is None or connection.session is not None:
            return
        assert self.broker is not None
        connection.session = session
        self.current[client_id] = connection
        try:
            await self.broker.add_subscription((connection.identity.delivery_topic, QOS_0), session)
            link = connection.link = MqttLink(
                connection, layer=self.layer, channel=self.channel, links=self.links
            )
            self.links[link.agent_id] = link
            if await link.attach():
                link.tasks.spawn(connection.serve())
        except Exception:
            logger.exception("device %s: could not take the connection over", connection.identity.agent_id)
            connection.close("the hub could not take the device over")

    def _connection_of(self, client_id: str, session: Session) -> DeviceConnection | None:
        """The connection this session is, by its peer; a persistent session keeps the peer of
        its first connection, so else the newest connection of the client id not yet accepted."""
        waiting = [c for c in self.connections if c.identity.client_id == client_id and c.session is None]
        by_peer = [c for c in waiting if c.peer == (session.remote_address, session.remote_port)]
        found = by_peer or waiting
        return found[-1] if found else None

    def on_message(self, client_id: str, topic: str, data: bytes) -> None:
        """A message the ACL let through: the device's own, on its own topic."""
        connection = self.current.get(client_id)
        if connection is not None:
            connection.inbox.put_nowait(data)

    async def publish(self, topic: str, data: bytes) -> None:
        assert self.broker is not None
        await self.broker.internal_message_broadcast(topic, data, QOS_0)

    async def _ended(self, connection: DeviceConnection) -> None:
        if self.current.get(connection.identity.client_id) is connection:
            del self.current[connection.identity.client_id]
        if connection.link is not None:
            await connection.link.detach(connection.ending)

    # --- silence ---------------------------------------------------------------------------------

    async def _sweep(self) -> None:
        while True:
            await asyncio.sleep(SWEEP_SECONDS)
            for connection in list(self.connections):
                silent = connection.silent_for()
                if silent > connection.allowance:
                    logger.info("device %s: silent for %.0f s", connection.identity.agent_id, silent)
                    connection.close(f"the device was silent for {silent:.0f} s")

    # --- the channel layer -----------------------------------------------------------------------

    async def _on_layer_message(self, message: dict[str, Any]) -> None:
        """A message on the group of one of the listener's devices, for that device's link."""
        agent_id = str(message.get("agent_id"))
        link = self.links.get(agent_id)
        if link is not None:
            await link.handle(message)
        elif message.get("type") == agent_channels.CALL:  # the device left meanwhile
            reply = {"type": agent_channels.REPLY, **to_wire(DeviceGone.offline(agent_id))}
            await answer(self.layer, message, reply)
