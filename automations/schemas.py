"""Rooms' and scenes' row shapes, each declared once (`common.schemas`): what the selectors
return, the REST API answers and the MCP tools declare. Times in ISO 8601."""

from __future__ import annotations

from typing import Any

from typing_extensions import TypedDict


class RoomLight(TypedDict):
    name: str
    label: str
    on: bool


class RoomSensor(TypedDict):
    # A sensor's latest value.
    path: str  # zone/device_type/device_id/channel
    zone: str
    device_type: str
    device_id: str
    channel: str
    value: float
    unit: str
    measured_at: str


class RoomDevice(TypedDict):
    agent_id: str
    name: str
    online: bool


class RoomContents(TypedDict):
    lights: list[RoomLight]
    sensors: list[RoomSensor]
    devices: list[RoomDevice]


class RoomOut(TypedDict):
    name: str
    zones: list[str]
    lights: list[RoomLight]
    sensors: list[RoomSensor]
    devices: list[RoomDevice]


class RoomsOut(TypedDict):
    rooms: list[RoomOut]
    elsewhere: RoomContents  # what belongs to no room


class ToolCallOut(TypedDict):
    tool: str
    arguments: dict[str, Any]


class SceneOut(TypedDict):
    name: str
    lights: dict[str, bool]
    tool_calls: list[ToolCallOut]


class ScenesOut(TypedDict):
    scenes: list[SceneOut]


class SceneStep(TypedDict):
    # One light change or tool call of an activation, and how it went.
    tool: str
    arguments: dict[str, Any]
    ok: bool
    error: str | None


class SceneActivation(TypedDict):
    scene: str
    ok: bool  # every step succeeded
    steps: list[SceneStep]
