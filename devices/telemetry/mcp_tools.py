"""Tools that read telemetry: every sensor's latest value, and a sensor's history."""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from common.schemas import output_model
from common.storable import LookupText
from devices.telemetry import selectors
from devices.telemetry.schemas import SensorHistory, SensorValues
from mcp_endpoint.engine.registry import registry, tool
from mcp_endpoint.engine.tool_errors import ToolError
from mcp_endpoint.engine.tools import ToolContext

registry.add_instructions(
    "Sensors (temperature, humidity, CO2, presence...) report through MQTT: get_sensor_values "
    "reads the latest values, get_sensor_history a sensor's recent readings."
)


class SensorValuesInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    zone: LookupText | None = Field(None, description="Only this zone, e.g. meeting_room_a")
    channel: LookupText | None = Field(None, description="Only this channel, e.g. temperature")


class SensorHistoryInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: LookupText = Field(
        description="The sensor, as get_sensor_values names it: zone/device_type/device_id/channel"
    )
    range: Literal["hour", "day", "week"] = Field("day", description="How far back from now")
    max_points: int = Field(200, ge=2, le=2000, description="At most this many points, evenly thinned")


@tool(scope="read", read_only=True, idempotent=True, output=output_model(SensorValues))
def get_sensor_values(args: SensorValuesInput, ctx: ToolContext) -> SensorValues:
    """Latest value of every sensor (temperature, humidity, CO2, presence...), optionally of one
    zone or channel"""
    rows = selectors.latest_readings()
    return {
        "sensors": [
            {
                "path": r["path"],
                "value": r["value"],
                "unit": r["unit"],
                "measured_at": r["measured_at"].isoformat(),
            }
            for r in rows
            if (args.zone is None or r["zone"] == args.zone)
            and (args.channel is None or r["channel"] == args.channel)
        ]
    }


@tool(scope="read", read_only=True, idempotent=True, output=output_model(SensorHistory))
def get_sensor_history(args: SensorHistoryInput, ctx: ToolContext) -> SensorHistory:
    """A sensor's readings over the last hour, day or week, oldest first"""
    parts = args.path.split("/")
    key = selectors.SensorKey(*parts) if len(parts) == 4 else None
    if key is None or not selectors.sensor_exists(key):
        raise ToolError(
            f"Unknown sensor '{args.path}'. Call get_sensor_values to see the sensors and their paths."
        )
    series = selectors.sensor_series(key, args.range, max_points=args.max_points)
    return {
        "path": key.path,
        "unit": series["unit"],
        "since": series["since"].isoformat(),
        "until": series["until"].isoformat(),
        "points": [{"at": at.isoformat(), "value": value} for at, value in series["points"]],
    }
