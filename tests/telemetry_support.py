"""Telemetry for tests, stored the way the MQTT worker stores it (history and latest values)."""

from __future__ import annotations

from collections.abc import Iterable

from devices.telemetry import services as telemetry_services
from devices.telemetry.models import TelemetryReading
from devices.telemetry.parsing import Reading


def store_readings(rows: Iterable[TelemetryReading]) -> None:
    """Store unsaved `TelemetryReading`s through `telemetry_services.store_batch`."""
    batch = telemetry_services.Batch()
    for row in rows:
        batch.readings.append(
            Reading(
                row.zone,
                row.device_type,
                row.device_id,
                row.channel,
                row.value,
                row.unit,
                row.measured_at.timestamp(),
            )
        )
    telemetry_services.store_batch(batch)
