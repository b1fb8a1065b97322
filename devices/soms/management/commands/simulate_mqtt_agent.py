import contextlib
import signal
import threading
from urllib.parse import urlsplit

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from common.mqtt import topics
from devices.soms.simulator import SimulatedMqttAgent


class Command(BaseCommand):
    help = "Run a simulated SOMS agent (MCP over MQTT, seed 004) that serves tools and publishes telemetry."

    def add_arguments(self, parser):
        parser.add_argument("agent_id")
        parser.add_argument("--url", default=None, help="the broker (default: MQTT_URL)")
        parser.add_argument("--zone", default="office")
        parser.add_argument("--heartbeat", type=float, default=None, help="seconds between heartbeats")
        parser.add_argument("--telemetry", type=float, default=None, help="seconds between readings")
        parser.add_argument("--username", default="")
        parser.add_argument("--password", default="")

    def handle(self, *args, agent_id, url, zone, heartbeat, telemetry, username, password, **options):
        if not topics.valid_agent_id(agent_id):
            raise CommandError("agent_id must be 1 to 64 of A-Z a-z 0-9 _ -")
        parts = urlsplit(url or settings.MQTT_URL)
        agent = SimulatedMqttAgent(
            parts.hostname or "127.0.0.1",
            parts.port or 1883,
            agent_id,
            zone=zone,
            username=username,
            password=password,
            heartbeat=heartbeat,
            telemetry_seconds=telemetry,
        )
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        agent.start()
        self.stdout.write(f"Agent {agent_id} on {parts.hostname}:{parts.port or 1883}; Ctrl-C to stop.")
        self.stdout.flush()
        with contextlib.suppress(KeyboardInterrupt):
            stop.wait()
        agent.stop()
