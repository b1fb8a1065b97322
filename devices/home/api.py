"""The home's REST router: lights, the alarm and people. Writes audited as `rest`."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Router, Schema, Status

from audit.models import Event
from common import roles
from common.rest import Error, Name, need, rest_caller
from devices.home import selectors, services
from devices.home.errors import LightNotFound, PersonNotFound
from devices.home.schemas import AlarmOut, LightOut, PersonOut
from mcp_endpoint.engine.pipeline import call_tool_or_raise
from mcp_endpoint.engine.tools import Caller

REST = Event.Interface.REST
router = Router(tags=["home"])


def _caller(request: HttpRequest) -> Caller:
    """Lights and the alarm change through the one tool-call pipeline, as an MCP client changes
    them (`set_light_state`, `set_alarm_state`): its scope check, rate limit, metrics and audit.
    Presence has no tool: its service is called directly."""
    who = rest_caller(request)
    return Caller(actor=who.actor, interface=REST, scopes=who.scopes, audited=True, confirms=who.by_token)


class LightChange(Schema):
    on: bool


class AlarmChange(Schema):
    armed: bool


class PresenceChange(Schema):
    present: bool


@router.get("/lights", response=list[LightOut], summary="List the lights")
def list_lights(request: HttpRequest):
    need(request, "read")
    return selectors.lights()


@router.get("/lights/{name}", response={200: LightOut, 404: Error}, summary="One light")
def get_light(request: HttpRequest, name: Name):
    need(request, "read")
    row = selectors.light(name)
    if row is None:
        return Status(404, {"detail": str(LightNotFound(name))})
    return row


@router.patch("/lights/{name}", response={200: LightOut, 404: Error}, summary="Switch a light on or off")
def change_light(request: HttpRequest, name: Name, change: LightChange):
    need(request, "control", roles.SWITCH_LIGHTS)
    try:
        call_tool_or_raise("set_light_state", {"name": name, "on": change.on}, _caller(request))
    except LightNotFound as exc:
        return Status(404, {"detail": str(exc)})
    return selectors.light(name)


@router.get("/alarm", response=AlarmOut, summary="The alarm's state")
def get_alarm(request: HttpRequest):
    need(request, "read")
    return selectors.alarm()


@router.patch(
    "/alarm",
    response={200: AlarmOut, 403: Error},
    summary="Arm or disarm the alarm",
    description="With a token, the change waits for a person's confirmation on the dashboard "
    "(MCP_CONFIRMATION_SECONDS); 403 when it is denied or not given in time.",
)
def change_alarm(request: HttpRequest, change: AlarmChange):
    need(request, "control", roles.ARM_ALARM)
    call_tool_or_raise("set_alarm_state", {"armed": change.armed}, _caller(request))
    return selectors.alarm()


@router.get("/people", response=list[PersonOut], summary="Known people and who is home")
def list_people(request: HttpRequest):
    need(request, "read")
    return selectors.people()


@router.patch("/people/{name}", response={200: PersonOut, 404: Error}, summary="Set a person's presence")
def change_presence(request: HttpRequest, name: Name, change: PresenceChange):
    actor = need(request, "control", roles.MARK_PRESENCE)
    try:
        services.set_person_presence(name, change.present, actor=actor, interface=REST)
    except PersonNotFound as exc:
        return Status(404, {"detail": str(exc)})
    return selectors.person(name)
