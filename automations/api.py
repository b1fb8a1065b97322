"""Rooms', scenes' and automations' REST router. Activations run each step through the one
tool-call pipeline as the caller (audited as `rest`). An automation is enabled directly by an
owner's session; a token's enabling goes through the pipeline as `automation_set_enabled`, and
so waits for an owner's approval on the hub."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django.utils.translation import gettext
from ninja import Field, Query, Router, Schema, Status

from audit.models import Event
from automations import authoring, automation_selectors, selectors, services
from automations.dry_run import DAYS_MAX, dry_run
from automations.errors import AutomationError, AutomationNotFound, DefinitionError, SceneError, SceneNotFound
from automations.schemas import (
    AutomationDetail,
    AutomationRow,
    AutomationRunOut,
    DryRunOut,
    RoomsOut,
    SceneActivation,
    SceneOut,
    ValidationOut,
)
from automations.validation import validate
from common import roles
from common.rest import Error, Filter, Name, need, rest_caller
from mcp_endpoint.engine.pipeline import ToolRefused, call_tool_sync
from mcp_endpoint.engine.tools import Caller

REST = Event.Interface.REST
router = Router(tags=["rooms, scenes and automations"])


class SceneIn(Schema):
    lights: dict[str, bool]
    tool_calls: list[dict[str, Any]] = []


@router.get("/rooms", response=RoomsOut, summary="Each room with its lights, latest values and devices")
def list_rooms(request: HttpRequest):
    need(request, "read")
    return selectors.rooms()


@router.get("/scenes", response=list[SceneOut], summary="The scenes")
def list_scenes(request: HttpRequest):
    need(request, "read")
    return selectors.scenes()


@router.put("/scenes/{name}", response={200: SceneOut, 400: Error}, summary="Create or replace a scene")
def save_scene(request: HttpRequest, name: Name, scene: SceneIn):
    actor = need(request, "automations", roles.MANAGE_AUTOMATIONS)
    try:
        services.save_scene(name, scene.lights, scene.tool_calls, actor=actor, interface=REST)
    except SceneError as exc:
        return Status(400, {"detail": str(exc)})
    return selectors.scene(name.strip())


@router.delete("/scenes/{name}", response={204: None, 404: Error}, summary="Delete a scene")
def delete_scene(request: HttpRequest, name: Name):
    actor = need(request, "automations", roles.MANAGE_AUTOMATIONS)
    try:
        services.delete_scene(name, actor=actor, interface=REST)
    except SceneNotFound as exc:
        return Status(404, {"detail": str(exc)})
    return Status(204, None)


@router.post(
    "/scenes/{name}/activate",
    response={200: SceneActivation, 404: Error},
    summary="Activate a scene",
    description="Each light change and tool call runs as its own call under the caller's rights; "
    "with a token, a dangerous one waits for a person's confirmation. Answers each step's outcome.",
)
def activate_scene(request: HttpRequest, name: Name):
    need(request, "control", roles.RUN_SCENES)
    who = rest_caller(request)
    # A person's steps are held to their role (a member's scene cannot reach an owner's tools).
    scopes = who.scopes if who.role is None else roles.scopes_within(who.role, who.scopes)
    caller = Caller(actor=who.actor, interface=REST, scopes=scopes, audited=True, confirms=who.by_token)
    try:
        return services.activate_scene_sync(name, caller)
    except SceneNotFound as exc:
        return Status(404, {"detail": str(exc)})


# --- automations ------------------------------------------------------------------------------


class DefinitionIn(Schema):
    definition: dict[str, Any]


class DryRunIn(Schema):
    definition: dict[str, Any]
    days: int = Field(default=7, ge=1, le=DAYS_MAX)


class VersionIn(Schema):
    version: int = Field(ge=1, description="The version you mean: refused if it changed since")


class Refused(Schema):
    detail: str
    errors: list[str] = []  # a definition's problems, each naming its field


def _refused(exc: AutomationError) -> Status:
    if isinstance(exc, AutomationNotFound):
        return Status(404, {"detail": str(exc)})
    if isinstance(exc, DefinitionError):
        return Status(400, {"detail": gettext("The definition does not hold."), "errors": exc.errors})
    return Status(400, {"detail": str(exc)})


def _author_scopes(request: HttpRequest) -> frozenset[str]:
    """What an author may have an automation do: a token's scopes, a person's role's."""
    who = rest_caller(request)
    return who.scopes if who.role is None else roles.scopes_within(who.role, who.scopes)


def _person(request: HttpRequest) -> Any:
    """The logged-in account, None for a token."""
    return None if rest_caller(request).by_token else request.user


@router.get("/automations", response=list[AutomationRow], summary="The automations")
def list_automations(request: HttpRequest):
    need(request, "read")
    return automation_selectors.automation_list()


@router.get("/automations/runs", response=list[AutomationRunOut], summary="The latest runs")
def list_runs(request: HttpRequest, name: Filter | None = None, limit: int = Query(20, ge=1, le=200)):
    need(request, "read")
    return automation_selectors.automation_runs(name, limit)


@router.post("/automations/validate", response=ValidationOut, summary="Check a definition, saving nothing")
def validate_automation(request: HttpRequest, body: DefinitionIn):
    need(request, "automations", roles.MANAGE_AUTOMATIONS)
    try:
        definition = validate(body.definition, scopes=_author_scopes(request))
    except DefinitionError as exc:
        return {"valid": False, "errors": exc.errors, "definition": None}
    return {"valid": True, "errors": [], "definition": definition.as_json()}


@router.post(
    "/automations/dry-run",
    response={200: DryRunOut, 400: Refused},
    summary="What a definition would have done over the recorded past",
)
def dry_run_automation(request: HttpRequest, body: DryRunIn):
    need(request, "automations", roles.MANAGE_AUTOMATIONS)
    try:
        return dry_run(body.definition, body.days, scopes=_author_scopes(request))
    except AutomationError as exc:
        return _refused(exc)


@router.post(
    "/automations",
    response={200: AutomationRow, 400: Refused, 403: Refused},
    summary="Create or replace an automation",
    description="A new version; a change by a token disables it until an owner enables it. "
    "`enable`: an owner's session enables it at once.",
)
def save_automation(request: HttpRequest, body: DefinitionIn, enable: bool = False):
    actor = need(request, "automations", roles.MANAGE_AUTOMATIONS)
    user = _person(request)
    if enable and not authoring.is_owner(user):
        return Status(403, {"detail": gettext("Only an owner's session may enable an automation.")})
    try:
        row = authoring.save_automation(
            body.definition,
            actor=actor,
            interface=REST,
            scopes=_author_scopes(request),
            user=user,
            enable=enable,
        )
    except AutomationError as exc:
        return _refused(exc)
    return automation_selectors.automation_row(row)


@router.get("/automations/{name}", response={200: AutomationDetail, 404: Error}, summary="One automation")
def get_automation(request: HttpRequest, name: Name):
    need(request, "read")
    found = automation_selectors.automation_detail(name)
    if found is None:
        return Status(404, {"detail": str(AutomationNotFound(name))})
    return found


@router.post(
    "/automations/{name}/enable",
    response={200: AutomationRow, 400: Refused, 403: Refused, 404: Refused},
    summary="Enable an automation at a version",
    description="An owner's session enables it at once; a token's call waits for an owner's "
    "approval on the hub (who sees the definition and its dry run).",
)
def enable_automation(request: HttpRequest, name: Name, body: VersionIn):
    actor = need(request, "automations", roles.MANAGE_AUTOMATIONS)
    who = rest_caller(request)
    if who.by_token:
        caller = Caller(actor=actor, interface=REST, scopes=who.scopes, audited=True, confirms=True)
        arguments = {"name": name, "enabled": True, "version": body.version}
        try:
            result = call_tool_sync("automation_set_enabled", arguments, caller)
        except ToolRefused as refused:
            return Status(403, {"detail": refused.message})
        if result.is_error:
            return Status(400, {"detail": result.text or "Not enabled."})
        return result.structured
    return _set_enabled(request, name, True, body.version)


@router.post(
    "/automations/{name}/disable",
    response={200: AutomationRow, 400: Refused, 404: Refused},
    summary="Disable an automation",
)
def disable_automation(request: HttpRequest, name: Name):
    need(request, "automations", roles.MANAGE_AUTOMATIONS)
    return _set_enabled(request, name, False, None)


def _set_enabled(request: HttpRequest, name: str, enabled: bool, version: int | None) -> Any:
    actor = rest_caller(request).actor
    try:
        row = authoring.set_enabled(
            name, enabled, user=_person(request), actor=actor, interface=REST, version=version
        )
    except AutomationError as exc:
        return _refused(exc)
    return automation_selectors.automation_row(row)


@router.post(
    "/automations/{name}/restore/{number}",
    response={200: AutomationRow, 400: Refused, 404: Refused},
    summary="Save an earlier version again, as a new version",
)
def restore_automation(request: HttpRequest, name: Name, number: int):
    actor = need(request, "automations", roles.MANAGE_AUTOMATIONS)
    try:
        row = authoring.restore_version(
            name, number, actor=actor, interface=REST, user=_person(request), scopes=_author_scopes(request)
        )
    except AutomationError as exc:
        return _refused(exc)
    return automation_selectors.automation_row(row)


@router.delete("/automations/{name}", response={204: None, 404: Refused}, summary="Delete an automation")
def delete_automation(request: HttpRequest, name: Name):
    actor = need(request, "automations", roles.MANAGE_AUTOMATIONS)
    try:
        authoring.delete_automation(name, actor=actor, interface=REST)
    except AutomationError as exc:
        return _refused(exc)
    return Status(204, None)
