"""The demo's simulated ESP32s at run time, inside the hub's process: xiaozhi-style devices
on the hub's WebSocket (reconnecting if dropped), SOMS-style agents on the broker, and the
sensors of the WebSocket devices' rooms, which report through MQTT when there is a broker
and straight to the telemetry service when there is none."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import threading
import time
from datetime import tzinfo

import paho.mqtt.client as mqtt
from asgiref.sync import sync_to_async
from django.db import close_old_connections
from paho.mqtt.enums import CallbackAPIVersion

from audit.changes import announce_change
from devices.agents.models import Agent
from devices.soms.simulator import SimulatedMqttAgent, reading_message
from devices.telemetry.services import Batch, store_batch
from devices.xiaozhi.simulator import SimulatedDevice
from homehub.demo.catalogue import DemoAgent
from homehub.demo.climate import Room
from homehub.demo.services import DEVICE_TYPE, readings_at

logger = logging.getLogger(__name__)

READING_SECONDS = 5.0
HEARTBEAT_SECONDS = 10.0
RECONNECT_SECONDS = 2.0


class RoomSensors:
    """Every few seconds, a reading of each channel of each room."""

    def __init__(self, rooms: list[Room], tz: tzinfo, broker: tuple[str, int] | None) -> None:
        self.rooms = rooms
        self.tz = tz
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="demo-sensors", daemon=True)
        self._client: mqtt.Client | None = None
        if broker is not None:
            self._client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="homehub-demo-sensors")
            self._client.connect_async(*broker)

    def start(self) -> None:
        if self._client is not None:
            self._client.loop_start()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)
        if self._client is not None:
            self._client.disconnect()
            self._client.loop_stop()

    def _run(self) -> None:
        while not self._stop.wait(READING_SECONDS):
            readings = [r for room in self.rooms for r in readings_at(room, time.time(), self.tz)]
            try:
                if self._client is not None:
                    for r in readings:
                        message = reading_message(
                            r.zone, DEVICE_TYPE, r.device_id, r.channel, r.value, r.measured_at
                        )
                        self._client.publish(*message, qos=1)
                else:
                    close_old_connections()
                    latest = store_batch(Batch(readings=readings, alive={r.device_id for r in readings}))
                    announce_change({"kind": "telemetry", "count": len(latest), "sensors": latest})
            except Exception:
                logger.exception("demo: could not record the rooms' readings")


class DemoAgents:
    def __init__(
        self,
        agents: list[DemoAgent],
        tokens: dict[str, str],
        device_url: str,
        broker: tuple[str, int] | None,
        tz: tzinfo,
    ) -> None:
        ws = [a for a in agents if a.transport == Agent.Transport.WS]
        self._devices = [SimulatedDevice(device_url, a.agent_id, tokens[a.agent_id]) for a in ws]
        self._mqtt: list[SimulatedMqttAgent] = []
        if broker is not None:
            self._mqtt = [
                SimulatedMqttAgent(
                    *broker,
                    a.agent_id,
                    zone=a.room.zone,
                    heartbeat=HEARTBEAT_SECONDS,
                    telemetry_seconds=READING_SECONDS,
                    values=functools.partial(a.room.value, tz=tz),
                )
                for a in agents
                if a.transport == Agent.Transport.MQTT
            ]
        self._sensors = RoomSensors([a.room for a in ws], tz, broker)
        self._tasks: list[asyncio.Task[None]] = []

    def start(self) -> None:
        """Start everything; call it on the hub's event loop once it serves."""
        self._tasks = [asyncio.ensure_future(self._keep_connected(device)) for device in self._devices]
        for agent in self._mqtt:
            agent.start()
        self._sensors.start()

    async def _keep_connected(self, device: SimulatedDevice) -> None:
        while True:
            try:
                device.closed.clear()
                await device.connect()
                await device.closed.wait()
                logger.warning("demo: %s lost its connection; reconnecting", device.device_id)
            except Exception as exc:
                logger.warning("demo: %s could not connect (%s); retrying", device.device_id, exc)
            await asyncio.sleep(RECONNECT_SECONDS)

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for device in self._devices:
            with contextlib.suppress(Exception):
                await device.close()
        for agent in self._mqtt:
            await sync_to_async(_leave, thread_sensitive=False)(agent)
        await sync_to_async(self._sensors.stop, thread_sensitive=False)()


def _leave(agent: SimulatedMqttAgent) -> None:
    try:
        agent.stop()
    except (RuntimeError, ValueError):  # never connected: nothing to say goodbye on
        agent.client.loop_stop()
