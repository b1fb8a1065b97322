"""`/metrics` in Prometheus' text format: the counters and histograms of this host's processes
(every daphne and MQTT worker writing to PROMETHEUS_MULTIPROC_DIR, or this process alone when
it is unset) and the global figures read from the database at scrape time. docs/DEPLOY.md
explains the choice."""

from __future__ import annotations

import hmac
import logging
import os
from collections.abc import Iterator

from django.conf import settings
from prometheus_client import REGISTRY, CollectorRegistry, generate_latest, multiprocess
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from devices.agents.metrics import AgentsCollector
from devices.mqtt.metrics import MqttCollector
from mcp_endpoint.engine.metrics import EndpointsCollector, SessionsCollector

logger = logging.getLogger(__name__)


class DatabaseFigures:
    """The collectors that read the database; if it is down they are left out and
    `homehub_metrics_database_ok` says so, instead of the scrape failing."""

    def __init__(self) -> None:
        self.collectors: list[Collector] = [
            SessionsCollector(),
            EndpointsCollector(),
            AgentsCollector(),
            MqttCollector(),
        ]

    def collect(self) -> Iterator[Metric]:
        figures: list[Metric] = []
        try:
            for collector in self.collectors:
                figures.extend(collector.collect())
        except Exception:
            logger.warning("metrics: could not read the database figures", exc_info=True)
            figures = []
        yield from figures
        yield GaugeMetricFamily(
            "homehub_metrics_database_ok",
            "1 if the database figures could be read.",
            value=1 if figures else 0,
        )


def exposition() -> bytes:
    registry = CollectorRegistry()
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        multiprocess.MultiProcessCollector(registry)
    else:
        registry.register(REGISTRY)  # this process's figures (and its process_* gauges)
    registry.register(DatabaseFigures())
    return generate_latest(registry)


def closed() -> bool:
    """Neither a scrape token nor METRICS_PUBLIC: nobody may read the figures (they name the
    tools, devices and endpoints of the home)."""
    return not settings.METRICS_TOKEN and not settings.METRICS_PUBLIC


def authorized(header: str | None) -> bool:
    """`Authorization: Bearer <METRICS_TOKEN>` when a token is set; else anyone if
    METRICS_PUBLIC; else nobody."""
    expected = settings.METRICS_TOKEN
    if not expected:
        return bool(settings.METRICS_PUBLIC)
    scheme, _, given = (header or "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), expected.encode())
