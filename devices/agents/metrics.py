"""Prometheus figures of ESP32 agents, read from the database when scraped (every process
must agree on them)."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric

from devices.agents.selectors import online_agents_by_transport


class AgentsCollector:
    """Devices online by transport."""

    def collect(self) -> Iterator[Metric]:
        online = GaugeMetricFamily(
            "homehub_devices_online", "ESP32 agents online, by transport.", labels=["transport"]
        )
        for transport, count in online_agents_by_transport().items():
            online.add_metric([transport], count)
        yield online
