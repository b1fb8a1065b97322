"""Seed 000's six home tools, with its exact names, shapes and Spanish errors."""

from pydantic import BaseModel, ConfigDict

from common.schemas import NoArguments, output_model
from devices.home import services, state
from devices.home.errors import HomeError
from devices.home.schemas import AlarmStatusOut, AllStatesOut, LightsOnOut, PresenceOut
from mcp_endpoint.engine.registry import registry, tool
from mcp_endpoint.engine.tool_errors import ToolError
from mcp_endpoint.engine.tools import ToolContext

registry.add_instructions(
    "HomeHub runs a home: lights (salon, cocina, dormitorio, bano, garage), an alarm and the "
    "presence of known people. Read the state with get_all_states (or get_presence, "
    "get_alarm_status, list_lights_on) before changing it with set_light_state or "
    "set_alarm_state. Every change is audited under your identity."
)


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


@tool(scope="read", read_only=True, idempotent=True, output=output_model(PresenceOut))
async def get_presence(args: NoArguments, ctx: ToolContext) -> PresenceOut:
    """Obtiene el estado del detector de presencia"""
    return await state.presence()


@tool(scope="read", read_only=True, idempotent=True, output=output_model(AlarmStatusOut))
async def get_alarm_status(args: NoArguments, ctx: ToolContext) -> AlarmStatusOut:
    """Consulta si la alarma está armada"""
    return await state.alarm_status()


@tool(scope="read", read_only=True, idempotent=True, output=output_model(LightsOnOut))
async def list_lights_on(args: NoArguments, ctx: ToolContext) -> LightsOnOut:
    """Lista los nombres de las luces que están encendidas"""
    return await state.lights_on()


@tool(scope="control", idempotent=True, output=Outcome)
async def set_light_state(args: SetLightInput, ctx: ToolContext) -> dict[str, bool]:
    """Enciende o apaga una luz específica"""
    try:
        await services.aset_light_state(
            args.name, args.on, actor=ctx.caller.actor, interface=ctx.caller.interface
        )
    except HomeError as exc:
        raise ToolError(str(exc), structured={"ok": False, "error": str(exc)}, reason=exc) from None
    return {"ok": True}


def _disarms(args: SetAlarmInput) -> bool:
    """Disarming is the dangerous direction: arming leaves the house safer."""
    return not args.armed


@tool(scope="control", idempotent=True, destructive=True, dangerous_when=_disarms, output=Outcome)
async def set_alarm_state(args: SetAlarmInput, ctx: ToolContext) -> dict[str, bool]:
    """Arma o desarma la alarma"""
    await services.aset_alarm_state(args.armed, actor=ctx.caller.actor, interface=ctx.caller.interface)
    return {"ok": True}


@tool(scope="read", read_only=True, idempotent=True, output=output_model(AllStatesOut))
async def get_all_states(args: NoArguments, ctx: ToolContext) -> AllStatesOut:
    """Obtiene un snapshot completo del estado del sistema"""
    return await state.all_states()
