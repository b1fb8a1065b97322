"""Prometheus figures of the MQTT workers' broker links, from the reports they keep in the
database (any process can be scraped)."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric

from devices.mqtt import status


class MqttCollector:
    """Each running worker's broker link, subscriptions and adopted sessions."""

    def collect(self) -> Iterator[Metric]:
        running = [worker for worker in status.workers() if worker["running"]]
        connected = GaugeMetricFamily(
            "homehub_mqtt_broker_connected",
            "1 if the MQTT worker holds a link to the broker, 0 if it is retrying (running workers only).",
            labels=["worker"],
        )
        delivering = GaugeMetricFamily(
            "homehub_mqtt_subscription_ok",
            "0 if the broker refused the subscription or nothing arrives on it (its delivery probe "
            "did not come back), else 1 (connected workers only).",
            labels=["worker", "topic"],
        )
        adopted = GaugeMetricFamily(
            "homehub_mqtt_sessions_adopted",
            "Sessions of stopped workers that this worker holds (shared-group failover).",
            labels=["worker"],
        )
        for worker in running:
            connected.add_metric([worker["client_id"]], 1 if worker["connected"] else 0)
            adopted.add_metric([worker["client_id"]], len(worker["adopted"]))
            if worker["connected"]:
                for sub in worker["subscriptions"]:
                    delivering.add_metric(
                        [worker["client_id"], sub["topic"]], 0 if sub in worker["failing"] else 1
                    )
        yield connected
        yield delivering
        yield adopted
        yield GaugeMetricFamily(
            "homehub_mqtt_workers_running",
            "MQTT workers that reported in the last minute.",
            value=len(running),
        )
