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


# Automations.


class RunBrief(TypedDict):
    started_at: str
    status: str


class AutomationRow(TypedDict):
    name: str
    description: str
    enabled: bool
    version: int
    enabled_by: str | None  # the owner whose rights its runs act with
    last_run: RunBrief | None
    next_run: str | None  # the earliest upcoming time or sun moment of an enabled automation


class AutomationsOut(TypedDict):
    automations: list[AutomationRow]


class AutomationVersionOut(TypedDict):
    number: int
    definition: dict[str, Any]
    actor: str
    interface: str
    saved_at: str


class AutomationRunOut(TypedDict):
    automation: str
    version: int
    started_at: str
    finished_at: str | None
    status: str  # running, done, failed, skipped, stopped, missed
    trigger: dict[str, Any]
    trace: list[Any]  # each condition's result and each action's outcome
    depth: int


class AutomationRunsOut(TypedDict):
    runs: list[AutomationRunOut]


class AutomationDetail(TypedDict):
    name: str
    description: str
    enabled: bool
    version: int
    enabled_by: str | None
    enabled_at: str | None
    last_run: RunBrief | None
    next_run: str | None
    definition: dict[str, Any]
    versions: list[AutomationVersionOut]  # newest first
    runs: list[AutomationRunOut]  # the latest, newest first


class PlannedAction(TypedDict, total=False):
    # What one action of a dry run's firing would have done (nothing was done).
    kind: str  # tool, scene, delay, notify
    tool: str
    arguments: dict[str, Any]
    allowed: bool  # within the scopes of whoever enables it (a tool action)
    scene: str
    steps: list[ToolCallOut]  # the scene's light changes and tool calls
    delay_seconds: float
    notify: str
    title: str | None
    level: str


class DryFiring(TypedDict):
    at: str
    trigger: dict[str, Any]
    caused_by: str | None  # the automation whose run made the change that fired it
    conditions: list[dict[str, Any]]  # each with "ok" and "why"
    ran: bool  # every condition held: the actions would have run
    actions: list[PlannedAction]


# The window's bounds are "from" and "to" (a keyword of Python's, hence this spelling).
DryRunOut = TypedDict(
    "DryRunOut",
    {
        "name": str,
        "from": str,
        "to": str,
        "changes_replayed": int,
        "automation_changes": int,  # of those, made by automations' runs
        "fired": list[DryFiring],
        "truncated": bool,  # more firings than reported
    },
)


class ValidationOut(TypedDict):
    valid: bool
    errors: list[str]  # each naming its field
    definition: dict[str, Any] | None  # as it would be saved (defaults filled in)


class Deleted(TypedDict):
    name: str
    deleted: bool
