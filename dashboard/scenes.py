"""The Scenes page: members and owners activate scenes (`run_scenes`); owners create, edit and
delete them (`manage_automations`). Every change goes through `automations.services`, and an
activation's steps through the one tool-call pipeline as the person, held to their role."""

from __future__ import annotations

import json
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext
from django.views.decorators.http import require_GET, require_POST

from audit.models import Event
from automations import selectors, services
from automations.errors import SceneError
from common import roles
from dashboard.access import role_required
from devices.home import selectors as home_reads
from mcp_endpoint.auth.scopes import scopes
from mcp_endpoint.engine.tools import Caller

DASHBOARD = Event.Interface.DASHBOARD


@require_GET
@role_required(roles.SEE_HOME)
def scenes(request: HttpRequest) -> HttpResponse:
    editing = selectors.scene(request.GET.get("edit", "")) if request.GET.get("edit") else None
    lights = home_reads.lights()
    wanted = editing["lights"] if editing else {}
    return render(
        request,
        "dashboard/scenes.html",
        {
            "page": "scenes",
            "scenes": selectors.scenes(),
            "editing": editing,
            "lights": [{**light, "wanted": wanted.get(light["name"])} for light in lights],
            "tool_calls": json.dumps(editing["tool_calls"], indent=2, ensure_ascii=False)
            if editing
            else "[]",
        },
    )


@require_POST
@role_required(roles.RUN_SCENES)
def activate_scene(request: HttpRequest) -> HttpResponse:
    name = request.POST.get("name", "")
    role = roles.role_of(request.user)
    caller = Caller(
        actor=request.user.get_username(),
        interface=DASHBOARD,
        # each step as the person: a member's scene cannot reach an owner's tools
        scopes=roles.scopes_within(role, scopes.names()),
        audited=True,
    )
    try:
        outcome = services.activate_scene_sync(name, caller)
    except SceneError as exc:
        messages.error(request, str(exc))
    else:
        failed = [f"{s['tool']}: {s['error']}" for s in outcome["steps"] if not s["ok"]]
        if failed:
            messages.error(
                request,
                gettext("Scene '%(name)s' ran with failures: %(failures)s")
                % {"name": name, "failures": "; ".join(failed)},
            )
        else:
            messages.success(request, gettext("Scene '%(name)s' activated.") % {"name": name})
    return redirect("dashboard:home" if request.POST.get("from") == "home" else "dashboard:scenes")


@require_POST
@role_required(roles.MANAGE_AUTOMATIONS)
def save_scene(request: HttpRequest) -> HttpResponse:
    name = request.POST.get("name", "")
    lights = {
        light["name"]: request.POST[f"light-{light['name']}"] == "on"
        for light in home_reads.lights()
        if request.POST.get(f"light-{light['name']}") in ("on", "off")
    }
    try:
        calls: Any = json.loads(request.POST.get("tool_calls") or "[]")
    except ValueError:
        messages.error(
            request, gettext('Tool calls must be JSON: a list of {"tool": ..., "arguments": {...}}.')
        )
        return redirect("dashboard:scenes")
    try:
        services.save_scene(name, lights, calls, actor=request.user.get_username(), interface=DASHBOARD)
    except SceneError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, gettext("Scene '%(name)s' saved.") % {"name": name.strip()})
    return redirect("dashboard:scenes")


@require_POST
@role_required(roles.MANAGE_AUTOMATIONS)
def delete_scene(request: HttpRequest) -> HttpResponse:
    name = request.POST.get("name", "")
    try:
        services.delete_scene(name, actor=request.user.get_username(), interface=DASHBOARD)
    except SceneError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, gettext("Scene '%(name)s' deleted.") % {"name": name})
    return redirect("dashboard:scenes")
