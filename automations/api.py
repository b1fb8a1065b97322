"""Rooms' and scenes' REST router. Activations run each step through the one tool-call
pipeline as the caller (audited as `rest`)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Router, Schema, Status

from audit.models import Event
from automations import selectors, services
from automations.errors import SceneError, SceneNotFound
from automations.schemas import RoomsOut, SceneActivation, SceneOut
from common import roles
from common.rest import Error, Name, need, rest_caller
from mcp_endpoint.engine.tools import Caller

REST = Event.Interface.REST
router = Router(tags=["rooms and scenes"])


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
