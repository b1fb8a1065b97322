"""Prometheus counters of telemetry ingestion, counted in memory by the MQTT workers as they
store (summed over processes with PROMETHEUS_MULTIPROC_DIR)."""

from prometheus_client import Counter

READINGS_STORED = Counter(
    "homehub_telemetry_readings_ingested", "Telemetry readings stored by the MQTT workers."
)
MESSAGES_REJECTED = Counter(
    "homehub_telemetry_messages_rejected",
    "MQTT messages refused (bad topic or payload, refused command) and kept in RejectedMessage.",
)
