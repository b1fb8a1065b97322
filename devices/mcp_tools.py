"""Seed 000's six home tools, with its exact names, shapes and Spanish errors; and the
tools that reach ESP32 agents by name (each agent's own tools are offered by the gateway)."""

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from devices import history, selectors, services
from devices.errors import HomeError
from devices.gateway import gateway
from devices.storable import LookupText
from mcp_endpoint.registry import ToolContext, ToolError, ToolResult, registry, tool
from mcp_endpoint.scopes import declare_scope

declare_scope("devices", "ESP32 agents: list them and call their tools")
registry.add_instructions(
    "HomeHub runs a home: lights (salon, cocina, dormitorio, bano, garage), an alarm, presence "
    "of known people, sensors and ESP32 devices. Read the state with get_all_states (or "
    "get_presence, get_alarm_status, list_lights_on) before changing it with set_light_state or "
    "set_alarm_state. Every change is audited under your identity."
)


class NoArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Presence(BaseModel):
    present: bool
    known_people: list[str]


class AlarmStatus(BaseModel):
    armed: bool


class LightsOn(BaseModel):
    on: list[str]


class AllStates(BaseModel):
    lights: dict[str, bool]
    alarm: bool
    presence: Presence


class SetLightInput(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    name: str
    on: bool


class SetAlarmInput(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    armed: bool


class Outcome(BaseModel):
    ok: bool
    error: str | None = None


@tool(scope="read", read_only=True, idempotent=True)
async def get_presence(args: NoArguments, ctx: ToolContext) -> Presence:
    """Obtiene el estado del detector de presencia"""
    return await selectors.aget_presence()


@tool(scope="read", read_only=True, idempotent=True)
async def get_alarm_status(args: NoArguments, ctx: ToolContext) -> AlarmStatus:
    """Consulta si la alarma está armada"""
    return await selectors.aget_alarm_status()


@tool(scope="read", read_only=True, idempotent=True)
async def list_lights_on(args: NoArguments, ctx: ToolContext) -> LightsOn:
    """Lista los nombres de las luces que están encendidas"""
    return await selectors.alist_lights_on()


@tool(scope="control", idempotent=True)
async def set_light_state(args: SetLightInput, ctx: ToolContext) -> Outcome:
    """Enciende o apaga una luz específica"""
    try:
        await services.aset_light_state(
            args.name, args.on, actor=ctx.caller.actor, interface=ctx.caller.interface
        )
    except HomeError as exc:
        raise ToolError(str(exc), structured={"ok": False, "error": str(exc)}) from None
    return {"ok": True}


@tool(scope="control", idempotent=True, destructive=True)
async def set_alarm_state(args: SetAlarmInput, ctx: ToolContext) -> Outcome:
    """Arma o desarma la alarma"""
    await services.aset_alarm_state(args.armed, actor=ctx.caller.actor, interface=ctx.caller.interface)
    return {"ok": True}


@tool(scope="read", read_only=True, idempotent=True)
async def get_all_states(args: NoArguments, ctx: ToolContext) -> AllStates:
    """Obtiene un snapshot completo del estado del sistema"""
    return await selectors.aget_all_states()


class AgentToolInfo(BaseModel):
    name: str
    description: str
    available: bool
    gateway_name: str | None = Field(None, description="The name to call it by directly, while online")


class AgentInfo(BaseModel):
    agent_id: str
    name: str
    transport: str
    online: bool
    last_seen: str | None
    server_info: dict[str, Any]
    tools: list[AgentToolInfo]


class AgentList(BaseModel):
    agents: list[AgentInfo]


class CallAgentToolInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    agent_id: LookupText = Field(description="The agent, as list_agents names it")
    tool: LookupText = Field(description="The device's own tool name, e.g. self.audio_speaker.set_volume")
    arguments: dict[str, Any] = Field(default_factory=dict, description="As the tool's input schema asks")


@tool(scope="devices", read_only=True)
def list_agents(args: NoArguments, ctx: ToolContext) -> AgentList:
    """Lists the ESP32 agents (devices), whether each is online, and the tools each one offers"""
    agents = []
    for agent in selectors.list_agents():
        names = gateway.names_of(agent["agent_id"])
        last_seen = agent["last_seen"]
        agents.append(
            {
                **agent,
                "last_seen": last_seen.isoformat() if last_seen else None,
                "tools": [{**t, "gateway_name": names.get(t["name"])} for t in agent["tools"]],
            }
        )
    return {"agents": agents}


@tool(scope="devices", open_world=True)
async def call_agent_tool(args: CallAgentToolInput, ctx: ToolContext) -> ToolResult:
    """Calls one tool of an online ESP32 agent and returns the device's answer"""
    return await gateway.call(args.agent_id, args.tool, args.arguments, ctx.caller)


# --- telemetry ---------------------------------------------------------------------------------


class SensorValue(BaseModel):
    path: str = Field(description="zone/device_type/device_id/channel")
    value: float
    unit: str
    measured_at: str


class SensorValues(BaseModel):
    sensors: list[SensorValue]


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


class SensorPoint(BaseModel):
    at: str
    value: float


class SensorHistory(BaseModel):
    path: str
    unit: str
    since: str
    until: str
    points: list[SensorPoint]


@tool(scope="read", read_only=True, idempotent=True)
def get_sensor_values(args: SensorValuesInput, ctx: ToolContext) -> SensorValues:
    """Latest value of every sensor (temperature, humidity, CO2, presence...), optionally of one
    zone or channel"""
    rows = history.latest_readings()
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


@tool(scope="read", read_only=True, idempotent=True)
def get_sensor_history(args: SensorHistoryInput, ctx: ToolContext) -> SensorHistory:
    """A sensor's readings over the last hour, day or week, oldest first"""
    parts = args.path.split("/")
    key = history.SensorKey(*parts) if len(parts) == 4 else None
    if key is None or not history.sensor_exists(key):
        raise ToolError(
            f"Unknown sensor '{args.path}'. Call get_sensor_values to see the sensors and their paths."
        )
    series = history.sensor_series(key, args.range, max_points=args.max_points)
    return {
        "path": key.path,
        "unit": series["unit"],
        "since": series["since"].isoformat(),
        "until": series["until"].isoformat(),
        "points": [{"at": at.isoformat(), "value": value} for at, value in series["points"]],
    }
