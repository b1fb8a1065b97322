"""Rooms and scenes for LLMs: `list_rooms`, `scene_list` (read), `scene_save` (automations),
`scene_activate` (control; each of its steps is checked again as its own call)."""

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from automations import selectors, services
from automations.errors import SceneError
from automations.schemas import RoomsOut, SceneActivation, SceneOut, ScenesOut
from common.schemas import NoArguments, output_model
from mcp_endpoint.auth.scopes import declare_scope
from mcp_endpoint.engine.registry import registry, tool
from mcp_endpoint.engine.tool_errors import ToolError
from mcp_endpoint.engine.tools import ToolContext

declare_scope("automations", "writing automations and scenes")

registry.add_instructions(
    "Rooms group lights, sensor zones and devices: list_rooms shows each room with its lights, "
    "latest sensor values and devices. A scene is a named set of light states plus optional "
    "tool calls: scene_list, scene_save (scope automations), scene_activate (each step runs as "
    "its own call, under your scopes, and reports its outcome)."
)


class SceneToolCall(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    tool: str = Field(max_length=200)
    arguments: dict[str, Any] = Field(default_factory=dict)


class SceneSaveInput(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    name: str = Field(min_length=1, max_length=services.NAME_MAX)
    lights: dict[str, bool] = Field(
        description='Light name -> on (true) or off (false), e.g. {"salon": true}'
    )
    tool_calls: list[SceneToolCall] = Field(
        default_factory=list, max_length=services.TOOL_CALLS_MAX, description="Run after the lights, in order"
    )


class SceneName(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    name: str = Field(min_length=1, max_length=services.NAME_MAX)


@tool(scope="read", read_only=True, idempotent=True, output=output_model(RoomsOut))
def list_rooms(args: NoArguments, ctx: ToolContext) -> RoomsOut:
    """Each room with its lights (on/off), its sensor zones' latest values and its devices; then
    what belongs to no room"""
    return selectors.rooms()


@tool(scope="read", read_only=True, idempotent=True, output=output_model(ScenesOut))
def scene_list(args: NoArguments, ctx: ToolContext) -> ScenesOut:
    """The scenes: each one's light states and tool calls"""
    return {"scenes": selectors.scenes()}


@tool(scope="automations", idempotent=True, output=output_model(SceneOut))
def scene_save(args: SceneSaveInput, ctx: ToolContext) -> SceneOut:
    """Create or replace a scene; refused, naming it, when a light or tool does not exist"""
    calls = [c.model_dump() for c in args.tool_calls]
    try:
        row = services.save_scene(
            args.name, args.lights, calls, actor=ctx.caller.actor, interface=ctx.caller.interface
        )
    except SceneError as exc:
        raise ToolError(str(exc), reason=exc) from None
    return {"name": row.name, "lights": row.lights, "tool_calls": row.tool_calls}


@tool(scope="control", output=output_model(SceneActivation))
async def scene_activate(args: SceneName, ctx: ToolContext) -> SceneActivation:
    """Activate a scene: switch its lights, then run its tool calls, each as its own call (a
    dangerous one waits for a person's confirmation); answers each step's outcome"""
    try:
        return await services.activate_scene(args.name, ctx)
    except SceneError as exc:
        raise ToolError(str(exc), reason=exc) from None
