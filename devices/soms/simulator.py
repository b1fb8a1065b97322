"""A simulated SOMS agent (seed 004): an ESP32 that speaks MCP over MQTT and publishes telemetry.

Used by `manage.py simulate_mqtt_agent`, the tests and the benchmarks. Like SOMS firmware it
announces itself on `mcp/discovery` at boot (and again whenever the hub says `online` on
`homehub/status`), answers `list_tools` and `call_tool` on `mcp/{id}/request/...` with
answers on `mcp/{id}/response/{request_id}`, and has SOMS's habits: errors are plain
strings (`"error": "..."`), and a call of a tool it does not know gets no answer at all
(`silent_tools` lists such tools, as a stale tool list would).
Its last will is `offline` on `mcp/{id}/status`. With `telemetry_seconds` it publishes
temperature, humidity, CO2 and presence on `office/{zone}/sensor/{id}/{channel}`, from
`values(channel, time)` (by default `sensor_value`; the demo passes its rooms' climate).
"""

from __future__ import annotations

import json
import logging
import math
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion

from common.mqtt import topics

logger = logging.getLogger(__name__)

TOOLS = [
    {
        "name": "set_led_color",
        "description": "Set the status LED colour",
        "inputSchema": {
            "type": "object",
            "properties": {c: {"type": "integer", "minimum": 0, "maximum": 255} for c in "rgb"},
            "required": ["r", "g", "b"],
        },
    },
    {
        "name": "read_sensor",
        "description": "Read one of the agent's sensors now",
        "inputSchema": {
            "type": "object",
            "properties": {"channel": {"type": "string", "enum": ["temperature", "humidity", "co2"]}},
            "required": ["channel"],
        },
    },
]


@dataclass
class AgentState:
    led: tuple[int, int, int] = (0, 0, 0)
    calls: list[dict[str, Any]] = field(default_factory=list)


def sensor_value(channel: str, at: float) -> float:
    """Plausible indoor values that drift through the day."""
    day = math.sin(at / 86400 * 2 * math.pi)
    if channel == "temperature":
        return round(22 + 2.5 * day + random.uniform(-0.2, 0.2), 2)
    if channel == "humidity":
        return round(48 - 6 * day + random.uniform(-1, 1), 1)
    if channel == "co2":
        return round(520 + 180 * max(day, 0) + random.uniform(-15, 15))
    return float(random.random() < 0.3)  # presence


UNITS = {"temperature": "c", "humidity": "%", "co2": "ppm", "presence": ""}


def reading_message(
    zone: str, device_type: str, device_id: str, channel: str, value: float, at: float
) -> tuple[str, str]:
    """The topic and JSON payload of one telemetry reading, as the worker ingests them."""
    payload = {"value": value, "unit": UNITS[channel], "timestamp": round(at * 1000)}
    return f"office/{zone}/{device_type}/{device_id}/{channel}", json.dumps(payload)


class SimulatedMqttAgent:
    def __init__(
        self,
        host: str,
        port: int,
        agent_id: str,
        *,
        zone: str = "office",
        username: str = "",
        password: str = "",
        heartbeat: float | None = None,
        telemetry_seconds: float | None = None,
        methods: list[str] | None = None,
        silent_tools: tuple[str, ...] = (),
        values: Callable[[str, float], float] = sensor_value,
        last_will: bool = True,
    ) -> None:
        self.agent_id = agent_id
        self.zone = zone
        self.heartbeat = heartbeat
        self.telemetry_seconds = telemetry_seconds
        self.methods = methods
        # Listed but unknown to its dispatcher (a stale tool list): calls get SOMS's silence.
        self.silent_tools = silent_tools
        self.values = values
        self.state = AgentState()
        self.announced = threading.Event()
        self._stop = threading.Event()
        self.client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"agent-{agent_id}")
        if username:
            self.client.username_pw_set(username, password)
        if last_will:  # some boards set none: only their silence tells the hub they are gone
            self.client.will_set(f"mcp/{agent_id}/status", "offline", qos=1)
        self.client.on_connect = self._on_connect
        self.client.on_message = self._on_message
        self._host, self._port = host, port
        self._timer: threading.Thread | None = None

    def start(self) -> None:
        self.client.connect_async(self._host, self._port, keepalive=10)
        self.client.loop_start()
        if self.heartbeat or self.telemetry_seconds:
            self._timer = threading.Thread(target=self._publish_forever, daemon=True)
            self._timer.start()

    def pause_heartbeats(self) -> None:
        """Go quiet (heartbeats and telemetry) while staying connected, as a hung device does."""
        self._stop.set()

    def stop(self, *, gracefully: bool = True) -> None:
        """Leave; `gracefully=False` drops the socket so that the broker sends the last will."""
        self._stop.set()
        if gracefully:
            self.client.publish(f"mcp/{self.agent_id}/status", "offline", qos=1).wait_for_publish(2)
            self.client.disconnect()
        else:
            sock = self.client.socket()
            if sock is not None:
                sock.close()
        self.client.loop_stop()

    # --- MQTT ---------------------------------------------------------------------------------

    def _on_connect(
        self, client: mqtt.Client, userdata: Any, flags: Any, reason: Any, properties: Any
    ) -> None:
        client.subscribe([(f"mcp/{self.agent_id}/request/+", 1), (topics.HUB_STATUS, 1)])
        client.publish(f"mcp/{self.agent_id}/status", "online", qos=1)
        self.announce()

    def announce(self) -> None:
        body: dict[str, Any] = {"agent_id": self.agent_id, "capabilities": ["sensor", "light_control"]}
        if self.heartbeat:
            body["heartbeat"] = self.heartbeat
        if self.methods:
            body["methods"] = self.methods
        self.client.publish(topics.DISCOVERY, json.dumps(body), qos=1)
        self.announced.set()

    def _on_message(self, client: mqtt.Client, userdata: Any, message: mqtt.MQTTMessage) -> None:
        if message.topic == topics.HUB_STATUS:
            if message.payload == b"online":
                self.announce()
            return
        try:
            request = json.loads(message.payload)
        except ValueError:
            return
        method = message.topic.rsplit("/", 1)[-1]
        answer = self._answer(method, request.get("params") or {})
        if answer is None:
            return  # SOMS: an unknown tool gets no answer
        request_id = request.get("id")
        client.publish(
            f"mcp/{self.agent_id}/response/{request_id}",
            json.dumps({"jsonrpc": "2.0", "id": request_id, **answer}),
            qos=1,
        )

    def _answer(self, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        if method in {"list_tools", "tools/list"}:
            silent = [
                {"name": n, "description": "Listed, never answered", "inputSchema": {}}
                for n in self.silent_tools
            ]
            return {"result": {"tools": TOOLS + silent}}
        if method not in {"call_tool", "tools/call"}:
            return {"error": f"Unknown method {method}"}
        name, arguments = params.get("name"), params.get("arguments") or {}
        self.state.calls.append({"name": name, "arguments": arguments})
        if name == "set_led_color":
            try:
                rgb = tuple(int(arguments[c]) for c in "rgb")
            except (KeyError, TypeError, ValueError):
                return {"error": "Invalid color: r, g and b are required"}
            if not all(0 <= v <= 255 for v in rgb):
                return {"error": "Invalid color: each of r, g, b is 0-255"}
            self.state.led = rgb  # type: ignore[assignment]
            return {"result": {"content": [{"type": "text", "text": f"LED color set to {rgb}"}]}}
        if name == "read_sensor":
            channel = arguments.get("channel")
            if channel not in UNITS:
                return {"error": f"No sensor {channel}"}
            value = self.values(channel, time.time())
            return {"result": {"content": [{"type": "text", "text": f"{channel}={value}{UNITS[channel]}"}]}}
        return None

    # --- telemetry ------------------------------------------------------------------------------

    def _publish_forever(self) -> None:
        interval = min(x for x in (self.heartbeat, self.telemetry_seconds) if x)
        next_reading = 0.0
        while not self._stop.wait(interval):
            now = time.time()
            if self.heartbeat:
                self.client.publish(f"office/{self.zone}/sensor/{self.agent_id}/heartbeat", "1", qos=0)
            if self.telemetry_seconds and now >= next_reading:
                next_reading = now + self.telemetry_seconds
                for channel in UNITS:
                    value = self.values(channel, now)
                    self.client.publish(
                        *reading_message(self.zone, "sensor", self.agent_id, channel, value, now), qos=1
                    )
