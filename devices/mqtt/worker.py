"""The MQTT worker: one broker link feeding telemetry ingestion, the MCP bridge to MQTT
agents and the home's state out / commands in.

Threads: paho's network thread receives and queues (never touching the database); the
ingestion writer thread stores telemetry; everything else runs on an asyncio event loop,
the worker's own (`manage.py mqtt_worker`) or the hub's (`manage.py serve`, so that with
the in-memory channel layer LLM calls reach MQTT agents in the same process).

The worker never exits because the broker went away: paho reconnects with backoff, and on
each connection the worker subscribes again, says `online` on `homehub/status` (retained;
its last will says `offline`) and republishes the home's state.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Coroutine
from datetime import datetime
from typing import Any

import paho.mqtt.client as mqtt
from asgiref.sync import sync_to_async
from django.conf import settings
from django.utils import timezone

from devices import metrics, telemetry_services
from devices.broadcast import asend_home_event
from devices.mqtt import status, topics
from devices.mqtt.agents import AgentBridge, AnnouncementError, parse_announcement
from devices.mqtt.connection import BrokerConfig, connect, make_client
from devices.mqtt.home import HomeBridge
from devices.mqtt.ingest import Ingestor

logger = logging.getLogger(__name__)

QOS = 1
MAX_LIVE_SENSORS = 200  # per broadcast; past it the dashboard just refreshes
STOP_PUBLISH_SECONDS = 2.0


class Worker:
    def __init__(self, config: BrokerConfig, *, shared_group: str | None = None) -> None:
        self.config = config
        self.shared_group = settings.MQTT_SHARED_GROUP if shared_group is None else shared_group
        self.client = make_client(config)
        self.client.on_connect = self._on_connect
        self.client.on_disconnect = self._on_disconnect
        self.client.on_message = self._on_message
        self.ingestor = Ingestor(
            self.client.ack,
            self._on_stored,
            batch_size=settings.MQTT_BATCH_SIZE,
            batch_seconds=settings.MQTT_BATCH_SECONDS,
            queue_limit=settings.MQTT_QUEUE_LIMIT,
            rejected_keep=settings.MQTT_REJECTED_KEEP,
        )
        self.agents = AgentBridge(
            self._publish, owner=config.client_id, default_silence=settings.MQTT_AGENT_SILENCE_SECONDS
        )
        self.home = HomeBridge(self._publish_retained)
        self.connected = False
        self.stopping = False
        self.since: datetime | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._live: dict[str, dict[str, Any]] = {}
        self.counters: dict[str, int] = {"commands": 0, "announcements": 0, "refused": 0}

    # --- life ---------------------------------------------------------------------------------

    async def start(self) -> None:
        """Start on the running event loop; returns at once (the broker may still be away)."""
        self._loop = asyncio.get_running_loop()
        await self.agents.start()
        await self.home.start()
        self.ingestor.start()
        self._spawn(self._report_forever())
        self._spawn(self._broadcast_forever())
        connect(self.client, self.config)
        logger.info("mqtt worker %s: connecting to %s", self.config.client_id, self.config.address)

    async def stop(self) -> None:
        """Say `offline`, leave the broker, and write what is queued."""
        self.stopping = True
        if self.connected:
            info = self.client.publish(topics.HUB_STATUS, "offline", qos=QOS, retain=True)
            await asyncio.to_thread(info.wait_for_publish, STOP_PUBLISH_SECONDS)
        await self.agents.stop()
        await self.home.stop()
        self.client.disconnect()
        self.client.loop_stop()
        await asyncio.to_thread(self.ingestor.stop)
        self.connected = False
        for task in list(self._tasks):
            task.cancel()
        await self._report()

    def _spawn(self, coroutine: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _soon(self, coroutine_function: Any, *args: Any) -> None:
        """From paho's thread: run `coroutine_function(*args)` on the worker's loop."""
        assert self._loop is not None
        self._loop.call_soon_threadsafe(lambda: self._spawn(coroutine_function(*args)))

    # --- paho's network thread ----------------------------------------------------------------

    def _subscriptions(self) -> list[tuple[str, int]]:
        group = self.shared_group
        return [
            (topics.shared(topics.TELEMETRY, group), QOS),
            (topics.shared(topics.DISCOVERY, group), QOS),
            (topics.shared(topics.LIGHT_COMMANDS, group), QOS),
            (topics.shared(topics.ALARM_COMMANDS, group), QOS),
            (topics.RESPONSES, QOS),
            (topics.AGENT_STATUS, QOS),
            (topics.HUB_STATUS, QOS),
        ]

    def _on_connect(
        self, client: mqtt.Client, userdata: Any, flags: Any, reason: Any, properties: Any
    ) -> None:
        if reason.is_failure:
            logger.warning("mqtt worker: the broker refused the connection: %s", reason)
            return
        if self.since is not None and not flags.session_present:
            # The broker forgot this worker's session (it crashed before saving it, or ran
            # without persistence): whatever was published for it meanwhile was dropped.
            logger.warning(
                "mqtt worker %s: the broker lost this worker's session; readings published "
                "while it was away are lost (is the broker's persistence on?)",
                self.config.client_id,
            )
        self.connected = True
        self.since = timezone.now()
        logger.info("mqtt worker %s: connected to %s", self.config.client_id, self.config.address)
        client.subscribe(self._subscriptions())
        client.publish(topics.HUB_STATUS, "online", qos=QOS, retain=True)  # agents announce again
        self._soon(self.home.publish_all)

    def _on_disconnect(
        self, client: mqtt.Client, userdata: Any, flags: Any, reason: Any, properties: Any
    ) -> None:
        self.connected = False
        self.ingestor.connection_lost()
        if not self.stopping:
            logger.warning("mqtt worker: lost the broker (%s); reconnecting", reason)

    def _on_message(self, client: mqtt.Client, userdata: Any, message: mqtt.MQTTMessage) -> None:
        try:
            topic = message.topic
        except UnicodeDecodeError:
            client.ack(message.mid, message.qos)
            return
        if topic.startswith("office/"):
            self.ingestor.offer(topic, message.payload, message.mid, message.qos)
            return
        # Control messages are acted on once each; a redelivery after a crash is harmless.
        client.ack(message.mid, message.qos)
        self._soon(self._dispatch, topic, message.payload, message.retain)

    def _on_stored(self, latest: list[dict[str, Any]], alive: set[str]) -> None:
        """From the ingestion thread, once a batch is committed."""
        if self._loop is None:
            return
        self._loop.call_soon_threadsafe(self._note_stored, latest, alive)

    def _publish(self, topic: str, payload: str) -> None:
        self.client.publish(topic, payload, qos=QOS)

    def _publish_retained(self, topic: str, payload: str, retain: bool) -> None:
        self.client.publish(topic, payload, qos=QOS, retain=retain)

    # --- the event loop -------------------------------------------------------------------------

    async def _dispatch(self, topic: str, payload: bytes, retained: bool) -> None:
        if (response := topics.response_of(topic)) is not None:
            await self.agents.on_response(*response, payload)
        elif topic == topics.DISCOVERY:
            await self._on_announcement(topic, payload)
        elif (agent_id := topics.status_of(topic)) is not None:
            await self.agents.on_status(agent_id, payload)
        elif (light := topics.light_command_of(topic)) is not None:
            await self._on_command(topic, payload, self.home.on_light_command(light, payload), retained)
        elif topic == topics.ALARM_COMMANDS:
            await self._on_command(topic, payload, self.home.on_alarm_command(payload), retained)
        elif topic == topics.HUB_STATUS and payload == b"offline" and self.connected and not self.stopping:
            # Another worker's last will: the hub is still here.
            self._publish_retained(topics.HUB_STATUS, "online", True)

    async def _on_announcement(self, topic: str, payload: bytes) -> None:
        self.counters["announcements"] += 1
        try:
            announcement = parse_announcement(payload)
        except AnnouncementError as exc:
            await self._refuse(topic, payload, str(exc))
            return
        refusal = await self.agents.on_announcement(announcement)
        if refusal:
            await self._refuse(topic, payload, refusal)

    async def _on_command(
        self, topic: str, payload: bytes, applying: Coroutine[Any, Any, Any], retained: bool
    ) -> None:
        if retained:
            applying.close()  # a stale retained command must not replay on every connection
            return
        self.counters["commands"] += 1
        refusal = await applying
        if refusal:
            await self._refuse(topic, payload, refusal)

    async def _refuse(self, topic: str, payload: bytes, reason: str) -> None:
        self.counters["refused"] += 1
        metrics.MESSAGES_REJECTED.inc()
        logger.warning("mqtt worker: refused a message on %s: %s", topic, reason)
        batch = telemetry_services.Batch(rejected=[(topic, payload, reason)])
        await sync_to_async(telemetry_services.store_batch)(batch)

    def _note_stored(self, latest: list[dict[str, Any]], alive: set[str]) -> None:
        for sensor in latest:
            self._live[sensor["path"]] = sensor
        self.agents.heard_from(alive)

    async def _broadcast_forever(self) -> None:
        """Live sensor values for the dashboard, at most every MQTT_BROADCAST_SECONDS."""
        while True:
            await asyncio.sleep(settings.MQTT_BROADCAST_SECONDS)
            if not self._live:
                continue
            live, self._live = self._live, {}
            sensors = list(live.values())
            event: dict[str, Any] = {"kind": "telemetry", "count": len(sensors)}
            if len(sensors) <= MAX_LIVE_SENSORS:
                event["sensors"] = sensors
            await asend_home_event(event)

    def snapshot(self) -> dict[str, int]:
        return {**self.ingestor.counters, **self.counters, "backlog": self.ingestor.backlog}

    async def _report(self) -> None:
        try:
            await sync_to_async(status.report)(
                client_id=self.config.client_id,
                broker=self.config.address,
                connected=self.connected,
                since=self.since,
                counters=self.snapshot(),
            )
        except Exception:
            logger.exception("mqtt worker: could not report its status")

    async def _report_forever(self) -> None:
        while True:
            await self._report()
            await asyncio.sleep(status.REPORT_SECONDS)


async def run_until(stop: asyncio.Event, worker: Worker) -> None:
    """Run `worker` until `stop` is set, then stop it cleanly."""
    await worker.start()
    started = time.monotonic()
    try:
        await stop.wait()
    finally:
        logger.info("mqtt worker: stopping after %.0f s", time.monotonic() - started)
        await worker.stop()
