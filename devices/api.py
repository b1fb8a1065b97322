"""The home's REST router: lights, alarm, people, agents, sensors, telemetry and events.

Thin over `devices.history` (reads) and `devices.services` (writes, audited as `rest`)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from django.http import HttpRequest
from django.utils import timezone
from ninja import Field, Path, Query, Router, Schema, Status
from ninja.errors import HttpError

from common.rest import need
from devices import history, services
from devices.agent_calls import AgentCallError, call_agent_tool
from devices.errors import LightNotFound, PersonNotFound
from devices.models import Event

REST = Event.Interface.REST
router = Router()

# Identifiers travel in paths and filters: printable text, bounded.
Name = Annotated[str, Path(pattern=r"^[^\x00-\x1f\x7f]{1,200}$")]
Filter = Annotated[str, Query(pattern=r"^[^\x00-\x1f\x7f]{0,200}$")]
Limit = Annotated[int, Query(ge=1, le=500, description="Page size.")]
Offset = Annotated[int, Query(ge=0, le=1_000_000_000, description="Items to skip.")]


class Error(Schema):
    detail: Any


class LightOut(Schema):
    name: str
    label: str
    room: str
    on: bool
    updated_at: datetime


class LightChange(Schema):
    on: bool


class AlarmOut(Schema):
    armed: bool
    updated_at: datetime | None


class AlarmChange(Schema):
    armed: bool


class PersonOut(Schema):
    name: str
    present: bool
    updated_at: datetime


class PresenceChange(Schema):
    present: bool


class ToolOut(Schema):
    name: str
    description: str
    input_schema: dict[str, Any]
    available: bool


class AgentOut(Schema):
    agent_id: str
    name: str
    transport: str
    approved: bool
    online: bool
    last_seen: datetime | None
    server_info: dict[str, Any]
    tools: list[ToolOut]


class ToolCall(Schema):
    arguments: dict[str, Any] = Field(default_factory=dict)


class ToolCallOut(Schema):
    content: list[dict[str, Any]]
    structuredContent: dict[str, Any] | None = None
    isError: bool


class SensorOut(Schema):
    path: str
    zone: str
    device_type: str
    device_id: str
    channel: str
    value: float
    unit: str
    measured_at: datetime


class ReadingOut(Schema):
    value: float
    unit: str
    measured_at: datetime


class ReadingPage(Schema):
    sensor: str
    count: int
    limit: int
    offset: int
    items: list[ReadingOut]


class EventOut(Schema):
    id: int
    at: datetime
    actor: str
    interface: str
    action: str
    target: str
    before: Any = None
    after: Any = None


class EventPage(Schema):
    count: int
    limit: int
    offset: int
    items: list[EventOut]


def _aware(value: datetime | None) -> datetime | None:
    if value is not None and timezone.is_naive(value):
        return timezone.make_aware(value, timezone.get_default_timezone())
    return value


# --- lights ----------------------------------------------------------------------------------


@router.get("/lights", response=list[LightOut], tags=["home"], summary="List the lights")
def list_lights(request: HttpRequest):
    need(request, "read")
    return history.lights()


@router.get("/lights/{name}", response={200: LightOut, 404: Error}, tags=["home"], summary="One light")
def get_light(request: HttpRequest, name: Name):
    need(request, "read")
    row = history.light(name)
    if row is None:
        return Status(404, {"detail": str(LightNotFound(name))})
    return row


@router.patch(
    "/lights/{name}", response={200: LightOut, 404: Error}, tags=["home"], summary="Switch a light on or off"
)
def change_light(request: HttpRequest, name: Name, change: LightChange):
    actor = need(request, "control")
    try:
        services.set_light_state(name, change.on, actor=actor, interface=REST)
    except LightNotFound as exc:
        return Status(404, {"detail": str(exc)})
    return history.light(name)


# --- alarm -----------------------------------------------------------------------------------


@router.get("/alarm", response=AlarmOut, tags=["home"], summary="The alarm's state")
def get_alarm(request: HttpRequest):
    need(request, "read")
    return history.alarm()


@router.patch("/alarm", response=AlarmOut, tags=["home"], summary="Arm or disarm the alarm")
def change_alarm(request: HttpRequest, change: AlarmChange):
    actor = need(request, "control")
    services.set_alarm_state(change.armed, actor=actor, interface=REST)
    return history.alarm()


# --- people ----------------------------------------------------------------------------------


@router.get("/people", response=list[PersonOut], tags=["home"], summary="Known people and who is home")
def list_people(request: HttpRequest):
    need(request, "read")
    return history.people()


@router.patch(
    "/people/{name}", response={200: PersonOut, 404: Error}, tags=["home"], summary="Set a person's presence"
)
def change_presence(request: HttpRequest, name: Name, change: PresenceChange):
    actor = need(request, "control")
    try:
        services.set_person_presence(name, change.present, actor=actor, interface=REST)
    except PersonNotFound as exc:
        return Status(404, {"detail": str(exc)})
    return history.person(name)


# --- agents ----------------------------------------------------------------------------------


@router.get("/agents", response=list[AgentOut], tags=["agents"], summary="ESP32 agents and their tools")
def list_agents(request: HttpRequest):
    need(request, "read")
    return history.agents()


def _agent_or_404(agent_id: str) -> dict[str, Any]:
    row = history.agent(agent_id)
    if row is None:
        raise HttpError(404, f"Unknown agent '{agent_id}'.")
    return row


@router.get("/agents/{agent_id}", response={200: AgentOut, 404: Error}, tags=["agents"], summary="One agent")
def get_agent(request: HttpRequest, agent_id: Name):
    need(request, "read")
    return _agent_or_404(agent_id)


@router.get(
    "/agents/{agent_id}/tools",
    response={200: list[ToolOut], 404: Error},
    tags=["agents"],
    summary="An agent's tools",
)
def list_agent_tools(request: HttpRequest, agent_id: Name):
    need(request, "read")
    return _agent_or_404(agent_id)["tools"]


@router.post(
    "/agents/{agent_id}/tools/{tool}/call",
    response={200: ToolCallOut, 404: Error, 409: Error, 502: Error, 503: Error},
    tags=["agents"],
    summary="Call a tool on an online agent",
)
def call_tool(request: HttpRequest, agent_id: Name, tool: Name, call: ToolCall):
    actor = need(request, "devices")
    if history.agent_tool(agent_id, tool) is None:
        _agent_or_404(agent_id)
        return Status(404, {"detail": f"Agent '{agent_id}' has no tool '{tool}'."})
    try:
        return call_agent_tool(agent_id, tool, call.arguments, actor=actor, interface=REST)
    except AgentCallError as exc:
        return Status(exc.status, {"detail": exc.message})


# --- sensors and telemetry ---------------------------------------------------------------------


@router.get("/sensors", response=list[SensorOut], tags=["telemetry"], summary="Every sensor's latest value")
def list_sensors(request: HttpRequest):
    need(request, "read")
    return history.latest_readings()


@router.get(
    "/telemetry/{zone}/{device_type}/{device_id}/{channel}",
    response={200: ReadingPage, 404: Error},
    tags=["telemetry"],
    summary="A sensor's history, newest first",
)
def sensor_history(
    request: HttpRequest,
    zone: Name,
    device_type: Name,
    device_id: Name,
    channel: Name,
    since: datetime | None = None,
    until: datetime | None = None,
    limit: Limit = 100,
    offset: Offset = 0,
):
    need(request, "read")
    key = history.SensorKey(zone, device_type, device_id, channel)
    if not history.sensor_exists(key):
        return Status(404, {"detail": f"No readings for sensor '{key.path}'."})
    readings = history.sensor_readings(key, _aware(since), _aware(until))
    items = list(readings.values("value", "unit", "measured_at")[offset : offset + limit])
    return {"sensor": key.path, "count": readings.count(), "limit": limit, "offset": offset, "items": items}


# --- the audit trail ---------------------------------------------------------------------------


@router.get("/events", response=EventPage, tags=["events"], summary="The audit trail, newest first")
def list_events(
    request: HttpRequest,
    interface: Annotated[Event.Interface | None, Query()] = None,
    actor: Filter = "",
    target: Filter = "",
    action: Filter = "",
    limit: Limit = 50,
    offset: Offset = 0,
):
    need(request, "read")
    found = history.events(interface=interface or "", actor=actor, target=target, action=action)
    items = list(found[offset : offset + limit])
    return {"count": found.count(), "limit": limit, "offset": offset, "items": items}
