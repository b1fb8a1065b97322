"""A simulated ESP32 device that behaves like stock xiaozhi firmware in MQTT mode (seed 001's
other transport), on the same MCP server as the WebSocket simulator (`devices/xiaozhi/simulator.py`).

Used by `manage.py simulate_device --mqtt` and the tests. Like the firmware
(`MqttProtocol`), it takes the `mqtt` section of its OTA answer (`endpoint`, `client_id`,
`username`, `password`, `publish_topic`, `keepalive`), connects with MQTT 3.1.1 and a clean
session, and stays connected; it publishes every message at QoS 0 on `publish_topic` and
**never subscribes**: whatever the server sends reaches it only if the broker delivers it
unasked. It says `hello` (`"transport": "udp"`, `"version": 3`) only when a conversation opens
(`open_conversation`, which waits up to 10 s for the server's `hello` with `"transport":
"udp"`), and `goodbye` when it closes; MCP travels as `{"session_id", "type": "mcp",
"payload"}` whenever the server asks, conversation or none, with the session id of the last
server hello (empty before one). `vanish()` stops it dead without closing its connection, as a
device that lost power behind a NAT does.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass, field
from typing import Any

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion
from paho.mqtt.reasoncodes import ReasonCode

from devices.xiaozhi.simulator import (
    DEFAULT_PAGE_BYTES,
    HELLO_TIMEOUT,
    DeviceState,
    FirmwareMcpServer,
    FirmwareTool,
    firmware_tools,
)

logger = logging.getLogger(__name__)

FIRMWARE_KEEPALIVE = 240  # MqttProtocol's default when the OTA answer gives none


class ConnectRefused(Exception):
    """The broker refused the CONNECT; `code` is paho's reason code."""

    def __init__(self, code: ReasonCode) -> None:
        super().__init__(f"the broker refused the connection: {code}")
        self.code = code


@dataclass
class SimulatedMqttDevice(FirmwareMcpServer):
    section: dict[str, Any]  # the OTA answer's `mqtt` section
    page_bytes: int = DEFAULT_PAGE_BYTES
    reply_delay: float = 0.0
    drop_on_call: bool = False
    board: str = "homehub-sim"
    firmware_version: str = "1.9.0"
    tools: list[FirmwareTool] = field(default_factory=firmware_tools)
    state: DeviceState = field(default_factory=DeviceState)

    def __post_init__(self) -> None:
        self.session_id = ""  # of the server's last hello
        self.received: list[dict[str, Any]] = []  # every MCP payload from the hub
        self.heard: list[dict[str, Any]] = []  # every message from the hub
        self.closed = asyncio.Event()
        self._calls: set[asyncio.Task[None]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._inbox: asyncio.Queue[bytes] = asyncio.Queue()
        self._hello: asyncio.Future[dict[str, Any]] | None = None
        self._reader: asyncio.Task[None] | None = None
        self.client = mqtt.Client(
            CallbackAPIVersion.VERSION2,
            client_id=self.section["client_id"],
            protocol=mqtt.MQTTv311,
            clean_session=True,
            reconnect_on_failure=False,
        )
        self.client.username_pw_set(self.section["username"], self.section["password"])

    @property
    def agent_id(self) -> str:
        return str(self.section["client_id"])

    # --- connection ------------------------------------------------------------------------------

    async def connect(self) -> None:
        """Connect to the endpoint; raises `ConnectRefused` when the broker says no."""
        self._loop = asyncio.get_running_loop()
        accepted: asyncio.Future[ReasonCode] = self._loop.create_future()

        def answered(code: ReasonCode) -> None:
            if not accepted.done():
                accepted.set_result(code)

        def on_connect(client: Any, userdata: Any, flags: Any, code: ReasonCode, properties: Any) -> None:
            self._soon(lambda: answered(code))

        self.client.on_connect = on_connect
        self.client.on_message = self._on_publish
        self.client.on_disconnect = lambda *args: self._soon(self._disconnected)
        host, _, port = str(self.section["endpoint"]).rpartition(":")
        keepalive = int(self.section.get("keepalive") or FIRMWARE_KEEPALIVE)
        self.client.connect_async(host, int(port), keepalive=keepalive)
        self.client.loop_start()
        code = await asyncio.wait_for(accepted, HELLO_TIMEOUT)
        if code.is_failure:
            await self.close()
            raise ConnectRefused(code)
        self._reader = asyncio.ensure_future(self._read())

    def _soon(self, callback: Any) -> None:
        """From paho's network thread to the device's event loop."""
        assert self._loop is not None
        if not self._loop.is_closed():
            self._loop.call_soon_threadsafe(callback)

    def _disconnected(self) -> None:
        self.closed.set()
        if self._reader is not None:
            self._reader.cancel()

    async def close(self) -> None:
        """Disconnect cleanly (MQTT DISCONNECT)."""
        self.client.disconnect()
        await asyncio.to_thread(self.client.loop_stop)
        self._disconnected()

    async def vanish(self) -> None:
        """Stop dead: no more packets, pings included, and the connection left open."""
        await asyncio.to_thread(self.client.loop_stop)
        if self._reader is not None:
            self._reader.cancel()

    def _publish(self, message: dict[str, Any]) -> None:
        self.client.publish(self.section["publish_topic"], json.dumps(message), qos=0)

    async def publish_raw(self, payload: bytes | str) -> None:
        """Publish anything at all on its topic (tests of what the hub tolerates)."""
        self.client.publish(self.section["publish_topic"], payload, qos=0)

    # --- conversations -----------------------------------------------------------------------------

    async def open_conversation(self) -> dict[str, Any]:
        """Say hello as `MqttProtocol::OpenAudioChannel` does; the server's hello."""
        assert self._loop is not None
        self._hello = self._loop.create_future()
        self._publish(
            {
                "type": "hello",
                "version": 3,
                "transport": "udp",
                "features": {"mcp": True},
                "audio_params": {"format": "opus", "sample_rate": 16000, "channels": 1, "frame_duration": 60},
            }
        )
        answer = await asyncio.wait_for(self._hello, HELLO_TIMEOUT)
        self.session_id = str(answer.get("session_id") or "")
        return answer

    async def close_conversation(self) -> None:
        self._publish({"session_id": self.session_id, "type": "goodbye"})

    # --- what the broker delivers (never asked for) -----------------------------------------------

    def _on_publish(self, client: Any, userdata: Any, message: mqtt.MQTTMessage) -> None:
        payload = bytes(message.payload)
        self._soon(lambda: self._inbox.put_nowait(payload))

    async def _read(self) -> None:
        while True:
            data = await self._inbox.get()
            try:
                message = json.loads(data)
            except ValueError:
                continue
            if not isinstance(message, dict):
                continue
            self.heard.append(message)
            kind = message.get("type")
            if kind == "hello" and message.get("transport") == "udp":
                if self._hello is not None and not self._hello.done():
                    self._hello.set_result(message)
            elif kind == "mcp":
                await self._on_mcp(message.get("payload"))

    async def _send(self, payload: dict[str, Any]) -> None:
        self._publish({"session_id": self.session_id, "type": "mcp", "payload": payload})

    async def _drop(self) -> None:
        await self.close()
