"""The MQTT worker: one broker link feeding telemetry ingestion, the MCP bridge to MQTT
agents and the home's state out / commands in.

Threads: paho's network threads receive and queue (never touching the database); the
ingestion writer thread stores telemetry; everything else runs on an asyncio event loop,
the worker's own (`manage.py mqtt_worker`) or the hub's (`manage.py serve`); either way the
channel layer (Redis, or the database without it) carries LLM calls to the MQTT agents.

The worker never exits because the broker went away: paho reconnects with backoff, and on
each connection the worker subscribes again (checking every SUBACK and proving delivery:
devices/mqtt/subscriptions.py), says `online` on `homehub/status` (retained) and, in a
shared group, on its own `homehub/workers/<group>/<id>` (where its last will says
`offline`; alone, the will is on `homehub/status`), and republishes the home's state. In a
shared group it also takes over the sessions of stopped workers (devices/mqtt/adoption.py).
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

from audit.changes import asend_home_event
from common.mqtt import topics
from common.mqtt.connection import BrokerConfig, BrokerConfigError, connect, leave, make_client, valid_group
from common.tasks import Tasks
from devices.agents import services as agent_services
from devices.home.mqtt import HomeBridge, without_code
from devices.mqtt import status
from devices.mqtt.adoption import OFFLINE, ONLINE, Adoption
from devices.mqtt.subscriptions import SubscriptionWatch
from devices.soms.link import AgentBridge, AnnouncementError, parse_announcement
from devices.telemetry import metrics
from devices.telemetry import services as telemetry_services
from devices.telemetry.ingest import Ingestor, Source

logger = logging.getLogger(__name__)

QOS = 1
MAX_LIVE_SENSORS = 200  # per broadcast; past it the dashboard just refreshes
STOP_PUBLISH_SECONDS = 2.0
# Telemetry rewrites an agent's `last_seen` at most this often (not on every batch: an UPDATE
# each 50 ms costs the writer as much as parsing a tenth of the batch).
HEARD_FROM_SECONDS = 1.0
# What the group's subscriptions deliver; a session adopted from a stopped worker passes
# these on and drops the rest (its non-shared subscriptions' messages reach this worker too).
SHARED_ROOTS = (topics.DISCOVERY, topics.ALARM_COMMANDS)


class Worker:
    def __init__(self, config: BrokerConfig, *, shared_group: str | None = None) -> None:
        self.config = config
        self.shared_group = settings.MQTT_SHARED_GROUP if shared_group is None else shared_group
        if not valid_group(self.shared_group):
            raise BrokerConfigError(f"the shared group must not contain / + or #: {self.shared_group!r}")
        if self.shared_group:
            self.will = (topics.worker_status(self.shared_group, config.client_id), OFFLINE)
        else:
            self.will = (topics.HUB_STATUS, OFFLINE)
        self.client = make_client(config, will=self.will)
        self.client.on_connect = self._on_connect
        self.client.on_disconnect = self._on_disconnect
        self.own = Source(config.client_id, self.client.ack)
        self.ingestor = Ingestor(
            self._on_stored,
            batch_size=settings.MQTT_BATCH_SIZE,
            batch_seconds=settings.MQTT_BATCH_SECONDS,
            queue_limit=settings.MQTT_QUEUE_LIMIT,
            rejected_keep=settings.MQTT_REJECTED_KEEP,
        )
        self.watch = SubscriptionWatch(
            config.client_id,
            self._subscriptions(),
            username=config.username,
            probe_timeout=settings.MQTT_PROBE_TIMEOUT_SECONDS,
        )
        self.client.on_message = lambda client, userdata, message: self._handle(self.own, message)
        self.client.on_subscribe = lambda client, userdata, mid, codes, properties: self.watch.on_suback(
            mid, codes
        )
        self.adoption = Adoption(
            config,
            handle=self._handle,
            ingestor=self.ingestor,
            hand_on_agents=lambda: self._publish_retained(topics.HUB_STATUS, ONLINE, True),
        )
        self.agents = AgentBridge(
            self._publish,
            owner=config.client_id,
            default_silence=settings.MQTT_AGENT_SILENCE_SECONDS,
            probe_seconds=settings.MQTT_AGENT_PROBE_SECONDS,
        )
        self.home = HomeBridge(self._publish_retained)
        self.connected = False
        self.stopping = False
        self.since: datetime | None = None
        self._stale: list[str] = []  # subscriptions of an earlier run that this one does not make
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks = Tasks("mqtt worker")
        self._live: dict[str, dict[str, Any]] = {}
        self._heard: set[str] = set()  # devices whose `last_seen` was written since `_heard_at`
        self._heard_at = 0.0
        self.counters: dict[str, int] = {"commands": 0, "announcements": 0, "refused": 0}

    # --- life ---------------------------------------------------------------------------------

    async def start(self) -> None:
        """Start on the running event loop; returns at once (the broker may still be away)."""
        self._loop = asyncio.get_running_loop()
        wanted = {*self._subscriptions(), *self.watch.probe_topics.values()}
        earlier = await sync_to_async(status.subscribed_before)(self.config.client_id)
        self._stale = [topic for topic in earlier if topic not in wanted]
        await self.agents.start()
        await self.home.start()
        self.adoption.start()
        self.ingestor.start()
        self._tasks.spawn(self._report_forever())
        self._tasks.spawn(self._broadcast_forever())
        self._tasks.spawn(self._probe_forever())
        connect(self.client, self.config)
        logger.info("mqtt worker %s: connecting to %s", self.config.client_id, self.config.address)

    async def stop(self) -> None:
        """Store and acknowledge what is queued, hand adopted sessions back to the broker, and
        leave saying the last will (the group's other workers take this session over)."""
        self.stopping = True
        await self.agents.stop()
        await self.home.stop()
        await sync_to_async(self.ingestor.stop, thread_sensitive=False)()
        await self.adoption.stop()
        if self.connected and self.shared_group and not self.adoption.others_online():
            info = self.client.publish(topics.HUB_STATUS, OFFLINE, qos=QOS, retain=True)  # the last one
            await sync_to_async(info.wait_for_publish, thread_sensitive=False)(STOP_PUBLISH_SECONDS)
        will = self.will if self.connected else None
        await sync_to_async(leave, thread_sensitive=False)(self.client, self.config, will)
        self.client.loop_stop()
        self.connected = False
        self._tasks.cancel()
        await self._report()

    def _soon(self, coroutine_function: Any, *args: Any) -> None:
        """From paho's thread: run `coroutine_function(*args)` on the worker's loop."""
        assert self._loop is not None
        self._loop.call_soon_threadsafe(lambda: self._tasks.spawn(coroutine_function(*args)))

    # --- paho's network threads ---------------------------------------------------------------

    def _subscriptions(self) -> list[str]:
        group = self.shared_group
        own = [topics.RESPONSES, topics.AGENT_STATUS, topics.HUB_STATUS]
        if group:
            own.append(topics.worker_status(group, "+"))
        return [
            topics.shared(topics.TELEMETRY, group),
            topics.shared(topics.DISCOVERY, group),
            topics.shared(topics.LIGHT_COMMANDS, group),
            topics.shared(topics.ALARM_COMMANDS, group),
            *own,
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
        if self._stale:
            client.unsubscribe(self._stale)  # e.g. `office/#` kept from before a shared group
            self._stale = []
        self.watch.subscribe(client)
        self.watch.send_probes(client)  # after the SUBSCRIBE: the broker handles them in order
        client.publish(topics.HUB_STATUS, ONLINE, qos=QOS, retain=True)  # agents announce again
        if self.shared_group:
            client.publish(self.will[0], ONLINE, qos=QOS, retain=True)
        self._soon(self.home.publish_all)
        self._soon(self.adoption.link, True)

    def _on_disconnect(
        self, client: mqtt.Client, userdata: Any, flags: Any, reason: Any, properties: Any
    ) -> None:
        self.connected = False
        self.ingestor.connection_lost(self.own)
        self.watch.reset()
        self._soon(self.adoption.link, False)
        if not self.stopping:
            logger.warning("mqtt worker: lost the broker (%s); reconnecting", reason)

    def _handle(self, source: Source, message: mqtt.MQTTMessage) -> None:
        """A message from this worker's connection, or from a session it adopted."""
        try:
            topic = message.topic
        except UnicodeDecodeError:
            source.ack(message.mid, message.qos)
            return
        adopted = source is not self.own
        if topic.startswith("office/") and not topics.is_probe(topic):
            self.ingestor.offer(source, topic, message.payload, message.mid, message.qos, bool(message.dup))
            return
        # Everything else is acted on once each (a redelivery after a crash is harmless), and
        # at once: acknowledged here.
        source.ack(message.mid, message.qos)
        if topics.is_probe(topic):
            if not adopted:
                self.watch.on_probe(topic, message.payload)
        elif not adopted or topic in SHARED_ROOTS or topics.light_command_of(topic) is not None:
            self._soon(self._dispatch, topic, message.payload, message.retain)

    def _on_stored(self, latest: list[dict[str, Any]], alive: set[str]) -> None:
        """From the ingestion thread, once a batch is committed."""
        now = time.monotonic()
        if now - self._heard_at >= HEARD_FROM_SECONDS:
            self._heard.clear()
            self._heard_at = now
        if fresh := alive - self._heard:
            agent_services.heard_from(fresh)
            self._heard |= fresh
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
            await self._on_command(
                topic, without_code(payload), self.home.on_alarm_command(payload), retained
            )
        elif topic == topics.HUB_STATUS and payload == b"offline" and self.connected and not self.stopping:
            # Another worker's last will or goodbye: the hub is still here.
            self._publish_retained(topics.HUB_STATUS, ONLINE, True)
        elif self.shared_group and (worker := topics.worker_of(topic, self.shared_group)) is not None:
            await self.adoption.on_status(worker, payload)

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

    def alive(self) -> bool:
        """Liveness (devices/mqtt/watchdog.py): the writer thread runs; the caller is on the loop."""
        return self.ingestor.running()

    def snapshot(self) -> dict[str, int]:
        return {**self.ingestor.counters, **self.counters, "backlog": self.ingestor.backlog}

    async def _report(self) -> None:
        # A thread of its own: at a server's shutdown Django's database thread may be held by a
        # request waiting on this loop, and the last report must not wait for it.
        try:
            await sync_to_async(status.report, thread_sensitive=False)(
                client_id=self.config.client_id,
                broker=self.config.address,
                connected=self.connected,
                since=self.since,
                counters=self.snapshot(),
                subscriptions=self.watch.report(),
                adopted=self.adoption.adopted(),
            )
        except Exception:
            logger.exception("mqtt worker: could not report its status")

    async def _report_forever(self) -> None:
        while True:
            await self._report()
            await asyncio.sleep(status.REPORT_SECONDS)

    async def _probe_forever(self) -> None:
        """Late probes make their subscriptions `silent`; every MQTT_PROBE_SECONDS the probes
        go out again (and refused subscriptions are asked for again: an ACL may change)."""
        next_round = time.monotonic() + settings.MQTT_PROBE_SECONDS
        while True:
            await asyncio.sleep(min(1.0, settings.MQTT_PROBE_TIMEOUT_SECONDS / 4))
            self.watch.check_overdue()
            if time.monotonic() >= next_round:
                next_round = time.monotonic() + settings.MQTT_PROBE_SECONDS
                if self.connected:
                    if refused := self.watch.refused():
                        self.watch.subscribe(self.client, refused)
                    self.watch.send_probes(self.client)


async def run_until(stop: asyncio.Event, worker: Worker) -> None:
    """Run `worker` until `stop` is set, then stop it cleanly."""
    await worker.start()
    started = time.monotonic()
    try:
        await stop.wait()
    finally:
        logger.info("mqtt worker: stopping after %.0f s", time.monotonic() - started)
        await worker.stop()
