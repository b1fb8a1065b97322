"""Rooms, scenes and automations for LLMs: `list_rooms`, `scene_list` (read), `scene_save`
(automations), `scene_activate` (control; each of its steps is checked again as its own call);
`automation_list`, `automation_get`, `automation_runs` (read), `automation_validate`,
`automation_dry_run`, `automation_save`, `automation_set_enabled` (enabling waits for an
owner's approval on the hub, who becomes the one whose rights it runs with),
`automation_delete` (automations)."""

import json
from typing import Annotated, Any

from django.contrib.auth import get_user_model
from django.utils.translation import gettext
from pydantic import BaseModel, ConfigDict, Field

from automations import authoring, automation_selectors, selectors, services
from automations.automation_selectors import RUNS_MAX
from automations.definition import NAME_MAX
from automations.dry_run import DAYS_MAX, described, dry_run
from automations.errors import AutomationError, AutomationNotFound, DefinitionError, SceneError
from automations.resources import SCHEMA
from automations.schemas import (
    AutomationDetail,
    AutomationRow,
    AutomationRunsOut,
    AutomationsOut,
    Deleted,
    DryRunOut,
    RoomsOut,
    SceneActivation,
    SceneOut,
    ScenesOut,
    ValidationOut,
)
from automations.validation import validate
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


# --- automations ------------------------------------------------------------------------------

registry.add_instructions(
    "Automations run by themselves when something happens (a light, presence, the alarm, a sensor, "
    "a time, sunrise or sunset, a device coming or going). The JSON schema and examples are the "
    f"resource {SCHEMA}; the prompt write_automation guides you. Check a definition with "
    "automation_validate, try it on the recorded past with automation_dry_run, then "
    "automation_save (scope automations): it is saved disabled, and a saved change disables it. "
    "automation_set_enabled with the version saved waits for an owner's approval on the hub."
)

Definition = Annotated[
    dict[str, Any], Field(description=f"The automation as a JSON object: see the resource {SCHEMA}")
]


class AutomationName(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    name: str = Field(min_length=1, max_length=NAME_MAX)


class RunsInput(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    name: str | None = Field(
        default=None, max_length=NAME_MAX, description="One automation's; all when left out"
    )
    limit: int = Field(default=20, ge=1, le=RUNS_MAX)


class DefinitionInput(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    definition: Definition


class DryRunInput(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    definition: Definition
    days: int = Field(default=7, ge=1, le=DAYS_MAX, description="How far back to replay the home's history")


class SetEnabledInput(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    name: str = Field(min_length=1, max_length=NAME_MAX)
    enabled: bool
    version: int = Field(
        ge=1, description="The version you mean (automation_get): refused if it changed since"
    )


def _not_done(exc: AutomationError) -> ToolError:
    if isinstance(exc, DefinitionError):
        return ToolError("Not saved: " + "; ".join(exc.errors), reason=exc)
    return ToolError(str(exc), reason=exc)


@tool(scope="read", read_only=True, idempotent=True, output=output_model(AutomationsOut))
def automation_list(args: NoArguments, ctx: ToolContext) -> AutomationsOut:
    """The automations: each one's version, whether it runs (and with whose rights), its last
    run and its next scheduled moment"""
    return {"automations": automation_selectors.automation_list()}


@tool(scope="read", read_only=True, idempotent=True, output=output_model(AutomationDetail))
def automation_get(args: AutomationName, ctx: ToolContext) -> AutomationDetail:
    """One automation: its definition, every version and its latest runs"""
    found = automation_selectors.automation_detail(args.name)
    if found is None:
        raise ToolError(str(AutomationNotFound(args.name)))
    return found


@tool(scope="read", read_only=True, idempotent=True, output=output_model(AutomationRunsOut))
def automation_runs(args: RunsInput, ctx: ToolContext) -> AutomationRunsOut:
    """The latest runs (of one automation, or of all): what fired each, each condition's result
    and each action's outcome, how it ended"""
    return {"runs": automation_selectors.automation_runs(args.name, args.limit)}


@tool(scope="automations", read_only=True, idempotent=True, output=output_model(ValidationOut))
def automation_validate(args: DefinitionInput, ctx: ToolContext) -> ValidationOut:
    """Check a definition without saving it: every problem, each naming its field (a light,
    person, zone, agent, scene or tool that does not exist, arguments that do not fit the tool, a
    bad cron, a tool beyond your scopes)"""
    try:
        definition = validate(args.definition, scopes=ctx.caller.scopes)
    except DefinitionError as exc:
        return {"valid": False, "errors": exc.errors, "definition": None}
    return {"valid": True, "errors": [], "definition": definition.as_json()}


@tool(scope="automations", read_only=True, idempotent=True, output=output_model(DryRunOut))
def automation_dry_run(args: DryRunInput, ctx: ToolContext) -> DryRunOut:
    """What a definition would have done over the last `days` of the home's recorded history:
    each firing, its conditions, and what each action would have done (nothing is done)"""
    try:
        return dry_run(args.definition, args.days, scopes=ctx.caller.scopes)
    except AutomationError as exc:
        raise _not_done(exc) from None


@tool(scope="automations", idempotent=True, output=output_model(AutomationRow))
def automation_save(args: DefinitionInput, ctx: ToolContext) -> AutomationRow:
    """Create or replace an automation (by its name), as a new version; it is saved disabled,
    and a change disables an enabled one until an owner enables it again. Refused, naming each
    problem, when the definition does not hold"""
    caller = ctx.caller
    try:
        row = authoring.save_automation(
            args.definition, actor=caller.actor, interface=caller.interface, scopes=caller.scopes
        )
    except AutomationError as exc:
        raise _not_done(exc) from None
    return automation_selectors.automation_row(row)


def _enables(args: SetEnabledInput) -> bool:
    return args.enabled


def _approval_detail(args: SetEnabledInput) -> list[tuple[str, str]]:
    """What the owner approving an enabling sees on the request's page, in its language: the
    exact definition of that version, and what it would have done over the last week."""
    definition = automation_selectors.version_definition(args.name, args.version)
    named = {"name": args.name, "version": args.version}
    if definition is None:
        return [(gettext("Definition"), gettext("Automation '%(name)s' has no version %(version)s.") % named)]
    shown = json.dumps(definition, ensure_ascii=False, indent=2)
    try:
        tried = described(dry_run(definition))
    except AutomationError as exc:
        tried = gettext("It cannot run as it stands: %(why)s") % {"why": exc}
    return [
        (gettext("Definition (version %(version)s)") % named, shown),
        (gettext("Dry run over the last 7 days"), tried),
    ]


@tool(
    scope="automations",
    idempotent=True,
    destructive=True,
    dangerous_when=_enables,
    request_detail=_approval_detail,
    output=output_model(AutomationRow),
)
def automation_set_enabled(args: SetEnabledInput, ctx: ToolContext) -> AutomationRow:
    """Enable or disable an automation at the version you name. Enabling waits for an owner's
    approval on the hub (who sees the definition and its dry run); its runs then act with that
    owner's rights. Disabling is done at once"""
    caller = ctx.caller
    approver = None
    if args.enabled:
        if ctx.approved_by is None:
            raise ToolError("Enabling needs an owner: approve it on the hub, or enable it on the dashboard.")
        accounts = get_user_model()
        approver = accounts.objects.filter(**{accounts.USERNAME_FIELD: ctx.approved_by}).first()
    try:
        row = authoring.set_enabled(
            args.name,
            args.enabled,
            user=approver,
            actor=caller.actor,
            interface=caller.interface,
            version=args.version,
        )
    except AutomationError as exc:
        raise _not_done(exc) from None
    return automation_selectors.automation_row(row)


@tool(scope="automations", destructive=True, idempotent=True, output=output_model(Deleted))
def automation_delete(args: AutomationName, ctx: ToolContext) -> Deleted:
    """Delete an automation with its versions and runs"""
    try:
        authoring.delete_automation(args.name, actor=ctx.caller.actor, interface=ctx.caller.interface)
    except AutomationError as exc:
        raise _not_done(exc) from None
    return {"name": args.name, "deleted": True}
