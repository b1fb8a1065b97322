"""The demo's life inside `manage.py serve --demo`: prepared before the hub serves, agents
started once it does, all stopped with it."""

from __future__ import annotations

from django.conf import settings
from django.utils import timezone

from homehub.admin_login import local_url
from homehub.demo import broker as brokers
from homehub.demo.agents import DemoAgents
from homehub.demo.automations import seed_automations
from homehub.demo.banner import banner
from homehub.demo.catalogue import AGENTS
from homehub.demo.services import prepare


class Demo:
    def __init__(self, host: str, port: int) -> None:
        self.base = local_url(host, port)
        self.broker = brokers.DemoBroker(None, "not looked for yet")
        self._agents: DemoAgents | None = None

    def prepare(self) -> str:
        """Find (or start) a broker, write what the demo needs; the banner to print."""
        tz = timezone.get_current_timezone()
        self.broker = brokers.find_or_start(settings.MQTT_URL)
        tokens, mcp_token = prepare(AGENTS, tz)
        automations = seed_automations()  # after `prepare`: they name its sensor zones
        device_url = self.base.replace("http://", "ws://") + "/ws/devices/"
        self._agents = DemoAgents(AGENTS, tokens, device_url, self.broker.address, tz)
        return banner(self.base, mcp_token, self.broker, AGENTS, automations)

    def start(self) -> None:
        assert self._agents is not None, "prepare() first"
        self._agents.start()

    async def stop(self) -> None:
        if self._agents is not None:
            await self._agents.stop()

    def close(self) -> None:
        """Last: the private broker, if the demo started one."""
        self.broker.stop()
