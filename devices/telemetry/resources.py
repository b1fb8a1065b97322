"""Every sensor's latest value as an MCP resource (`home://sensors/latest`), updated for
subscribers whenever the MQTT worker stores readings."""

from __future__ import annotations

import json
from typing import Any

from audit.changes import CHANGE_EVENT, CHANGES_GROUP
from devices.telemetry import selectors
from mcp_endpoint.engine.providers import Resource, ResourceNotFound, ResourceTemplate

SENSORS = "home://sensors/latest"


class SensorResources:
    scope = "read"
    change_group = CHANGES_GROUP
    change_type = CHANGE_EVENT

    def list_resources(self) -> list[Resource]:
        return [Resource(SENSORS, "sensors", "El último valor de cada sensor")]

    def templates(self) -> list[ResourceTemplate]:
        return []

    def handles(self, uri: str) -> bool:
        return uri == SENSORS

    def read(self, uri: str) -> str:
        if uri != SENSORS:
            raise ResourceNotFound(uri)
        sensors = [
            {**row, "measured_at": row["measured_at"].isoformat()} for row in selectors.latest_readings()
        ]
        return json.dumps({"sensors": sensors}, ensure_ascii=False)

    def uris_for_event(self, event: dict[str, Any]) -> list[str]:
        return [SENSORS] if event.get("kind") == "telemetry" else []
