"""A stock xiaozhi device's session over MQTT (seed 001's other transport).

The device's messages are seed 001's, the WebSocket's, carried as MQTT messages on its
`publish_topic`: `hello` (here `"transport": "udp"`, `"version": 3`, sent only when a
conversation opens), `mcp` envelopes (`{"session_id", "type": "mcp", "payload"}`) and
`goodbye`. The hub's reach the device on its delivery topic, where the listener subscribed it
(it never subscribes itself). Over MQTT the device is reachable as long as it is connected, so
the link is made when the device connects, not at its hello: the hub initializes it and lists
its tools then, and calls it until it disconnects, conversation or none.

Audio is out of scope: the hub answers `hello` with `"transport": "udp"` and a `session_id` as
the firmware expects, without the `udp` block that would carry the audio, and says so; the
firmware then reports that the conversation could not open, while its MCP tools go on
working.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from django.conf import settings

from devices.agents import services as agent_services
from devices.agents.link import DeviceLink
from devices.agents.models import Agent
from devices.xiaozhi.mqtt.credentials import Identity
from mcp_endpoint.engine import jsonrpc

logger = logging.getLogger(__name__)

NO_AUDIO = "this hub carries no audio: it drives the device's MCP tools only, so no udp channel is offered"


class Connection(Protocol):
    """What the link needs of the device's connection (the listener's `DeviceConnection`)."""

    identity: Identity
    keepalive: int

    async def deliver(self, message: dict[str, Any]) -> None: ...

    def close(self, reason: str) -> None: ...


class MqttLink(DeviceLink):
    """One MQTT connection of a device, from its CONNECT to its disconnect. `links` is the
    listener's map of the links it holds (agent id -> link), which the link leaves when it
    lets go."""

    def __init__(
        self, connection: Connection, *, layer: Any, channel: str, links: dict[str, MqttLink]
    ) -> None:
        super().__init__(connection.identity.agent_id, layer=layer, channel=channel)
        self.connection = connection
        self.links = links
        self.conversation = False  # between a hello and its goodbye

    async def register(self) -> Agent:
        details = {
            "transport": "mqtt",
            "client_id": self.connection.identity.client_id,
            "keepalive": self.connection.keepalive,
        }
        await agent_services.aagent_connected(self.agent_id, self.session_id, details)
        return self.connection.identity.agent

    async def send(self, payload: dict[str, Any]) -> None:
        await self.connection.deliver({"session_id": self.session_id, "type": "mcp", "payload": payload})

    async def hang_up(self) -> None:
        self.connection.close("another session of the device took over")

    def let_go(self, reason: str) -> bool:
        if self.links.get(self.agent_id) is self:
            del self.links[self.agent_id]
        return super().let_go(reason)

    # --- messages from the device -------------------------------------------------------------

    async def receive(self, data: bytes) -> None:
        """One message the device published on its topic (anything else on it is ignored, as on
        the WebSocket)."""
        if len(data) > settings.DEVICE_MAX_MESSAGE_BYTES:
            logger.warning("device %s: ignoring a %d-byte message", self.agent_id, len(data))
            return
        try:
            message = jsonrpc.loads(data)
        except ValueError:
            logger.warning("device %s: ignoring a message that is not JSON", self.agent_id)
            return
        if not isinstance(message, dict):
            return
        kind = message.get("type")
        if kind == "mcp" and self.client is not None:
            await self.client.feed(message.get("payload"))
        elif kind == "hello":
            await self._on_hello(message)
        elif kind == "goodbye":
            self.conversation = False
            logger.info("device %s: conversation closed", self.agent_id)

    async def _on_hello(self, message: dict[str, Any]) -> None:
        """The device opens a conversation: the answer it waits for, without audio."""
        self.conversation = True
        logger.info(
            "device %s: hello (version %s, transport %s); no audio here",
            self.agent_id,
            message.get("version"),
            message.get("transport"),
        )
        answer = {
            "type": "hello",
            "transport": "udp",
            "session_id": self.session_id,
            "audio": {"supported": False, "reason": NO_AUDIO},
        }
        await self.connection.deliver(answer)
