"""The homeowner's dashboard: thin views over the apps' selectors (reads) and the services
(writes, audited with interface `dashboard` and the user's name as actor).

Forms work without JavaScript (post, then redirect); `static/dashboard/app.js` enhances
them (fetch with `Accept: application/json`, live updates over `/ws/home/`)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.translation import gettext, ngettext
from django.views.decorators.http import require_GET, require_POST

from audit import selectors as audit_reads
from audit.models import Event
from automations import selectors as rooms_reads
from common import roles
from common.labels import LABEL_MAX_CHARS, LabelError
from dashboard import activity as activity_reads
from dashboard import readings, toolresults
from dashboard.access import role_required, wants_json
from dashboard.charts import NARROW, line_chart
from dashboard.toolforms import arguments_from, fields_for
from devices.agents import selectors as agents_reads
from devices.agents import services as agents
from devices.agents.calls import call_agent_tool, http_status
from devices.agents.gateway import gateway
from devices.agents.outcomes import CallFailed
from devices.home import selectors as home_reads
from devices.home import services
from devices.home.errors import HomeError
from devices.mqtt import status as mqtt_status
from devices.telemetry import selectors as telemetry_reads
from devices.telemetry import services as telemetry
from devices.telemetry import units
from devices.xiaozhi import selectors as xiaozhi_reads
from devices.xiaozhi import services as xiaozhi
from mcp_endpoint.engine.pipeline import ToolRefused, call_tool_or_raise
from mcp_endpoint.engine.tools import Caller
from mcp_endpoint.transports.outbound import endpoints as mcp_endpoints

DASHBOARD = Event.Interface.DASHBOARD


def _flag(value: str | None) -> bool:
    return (value or "").lower() in {"1", "true", "on", "yes"}


def _actor(request: HttpRequest) -> str:
    return request.user.get_username()


# --- home ------------------------------------------------------------------------------------


@require_GET
@role_required(roles.SEE_HOME)
def home(request: HttpRequest) -> HttpResponse:
    """One card per room (its lights, latest values and devices), then what is in no room;
    the scenes one click away."""
    people = home_reads.people()
    rooms, elsewhere = _rooms_with_tiles()
    return render(
        request,
        "dashboard/home.html",
        {
            "page": "home",
            "rooms": rooms,
            "elsewhere": elsewhere if any(elsewhere.values()) else None,
            "scenes": rooms_reads.scenes(),
            "alarm": home_reads.alarm(),
            "people": people,
            "home_count": sum(p["present"] for p in people),
        },
    )


def _rooms_with_tiles() -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The rooms (and what is in none) with their readings shaped as tiles: named, in their
    units, stale ones marked."""
    found = rooms_reads.rooms()
    by_zone = {zone: room["name"] for room in found["rooms"] for zone in room["zones"]}
    labels, stale = telemetry_reads.sensor_labels(), telemetry_reads.stale_sensors()

    def shaped(contents: Any) -> dict[str, Any]:
        sensors = readings.tiles(contents["sensors"], rooms_by_zone=by_zone, labels=labels, stale=stale)
        return {**contents, "sensors": sensors}

    return [shaped(room) for room in found["rooms"]], shaped(found["elsewhere"])


def _call(tool: str, who: dict[str, str], **arguments: Any) -> None:
    """A home change through the one tool-call pipeline, as an MCP client makes it (its
    metrics and audit; the homeowner holds every scope). Presence has no tool: its service is
    called directly."""
    call_tool_or_raise(tool, arguments, Caller(actor=who["actor"], interface=who["interface"], audited=True))


def _change(request: HttpRequest, name: str, field: str, write) -> HttpResponse:
    """Run one home write from a form; answer JSON (fetch) or redirect home (plain form)."""
    value = _flag(request.POST.get(field))
    try:
        write(value, actor=_actor(request), interface=DASHBOARD)
    except HomeError as exc:
        if wants_json(request):
            return JsonResponse({"error": str(exc)}, status=404)
        raise Http404(str(exc)) from None
    if wants_json(request):
        return JsonResponse({"name": name, field: value})
    return redirect("dashboard:home")


@require_POST
@role_required(roles.SWITCH_LIGHTS)
def switch_light(request: HttpRequest, name: str) -> HttpResponse:
    return _change(
        request, name, "on", lambda value, **who: _call("set_light_state", who, name=name, on=value)
    )


@require_POST
@role_required(roles.SWITCH_LIGHTS)
def all_lights_off(request: HttpRequest) -> HttpResponse:
    """Switch off every light that is on, each through the one tool-call pipeline (audited as
    any light switched from the dashboard)."""
    who = {"actor": _actor(request), "interface": DASHBOARD}
    switched = [light["name"] for light in home_reads.lights() if light["on"]]
    for name in switched:
        _call("set_light_state", who, name=name, on=False)
    if wants_json(request):
        return JsonResponse({"off": switched})
    messages.success(
        request,
        ngettext("%(count)d light switched off.", "%(count)d lights switched off.", len(switched))
        % {"count": len(switched)}
        if switched
        else gettext("All lights were already off."),
    )
    return redirect("dashboard:home")


def set_alarm(request: HttpRequest) -> HttpResponse:
    """GET: the confirmation page for disarming (without JavaScript). POST: arm or disarm;
    disarming needs `confirm=yes`."""
    if request.method == "GET":
        return render(request, "dashboard/confirm_disarm.html", {"page": "home", "alarm": home_reads.alarm()})
    if request.method != "POST":
        return HttpResponse(status=405, headers={"Allow": "GET, POST"})
    armed = _flag(request.POST.get("armed"))
    if not armed and request.POST.get("confirm") != "yes":
        if wants_json(request):
            return JsonResponse({"error": "Disarming needs confirmation (confirm=yes)."}, status=400)
        return redirect("dashboard:alarm")
    _call("set_alarm_state", {"actor": _actor(request), "interface": DASHBOARD}, armed=armed)
    if wants_json(request):
        return JsonResponse({"armed": armed})
    messages.success(request, gettext("Alarm armed.") if armed else gettext("Alarm disarmed."))
    return redirect("dashboard:home")


set_alarm = role_required(roles.ARM_ALARM)(set_alarm)


@require_POST
@role_required(roles.MARK_PRESENCE)
def set_presence(request: HttpRequest, name: str) -> HttpResponse:
    return _change(
        request, name, "present", lambda value, **who: services.set_person_presence(name, value, **who)
    )


# --- sensors ---------------------------------------------------------------------------------


@require_GET
@role_required(roles.SEE_HOME)
def sensors(request: HttpRequest) -> HttpResponse:
    """The latest readings grouped by room (in the rooms' order), those in no room last."""
    rooms, elsewhere = _rooms_with_tiles()
    groups = [{"name": room["name"], "sensors": room["sensors"]} for room in rooms if room["sensors"]]
    if elsewhere["sensors"]:
        groups.append({"name": "", "sensors": elsewhere["sensors"]})
    return render(request, "dashboard/sensors.html", {"page": "sensors", "groups": groups})


@require_GET
@role_required(roles.SEE_HOME)
def sensor_detail(
    request: HttpRequest, zone: str, device_type: str, device_id: str, channel: str
) -> HttpResponse:
    key = telemetry_reads.SensorKey(zone, device_type, device_id, channel)
    if not telemetry_reads.sensor_exists(key):
        raise Http404("No such sensor")
    range_name = request.GET.get("range", "day")
    if range_name not in telemetry_reads.RANGES:
        range_name = "day"
    series = telemetry_reads.sensor_series(key, range_name)
    latest = telemetry_reads.sensor_readings(key).values("value", "unit", "measured_at").first()
    values = [v for _, v in series["points"]]
    rooms, elsewhere = _rooms_with_tiles()
    tile = next(s for contents in [*rooms, elsewhere] for s in contents["sensors"] if s["path"] == key.path)
    over_the_last = {
        "hour": gettext("%(name)s over the last hour"),
        "day": gettext("%(name)s over the last day"),
        "week": gettext("%(name)s over the last week"),
    }  # whole sentences: the range's word is translated with them
    title = over_the_last.get(range_name, gettext("%(name)s over the last day")) % {"name": tile["name"]}
    return render(
        request,
        "dashboard/sensor_detail.html",
        {
            "page": "sensors",
            "key": key,
            "range": range_name,
            "ranges": list(telemetry_reads.RANGES),
            "tile": tile,
            "chart": line_chart(series, range_name, title, channel=channel, css="chart-wide"),
            "chart_narrow": line_chart(
                series, range_name, title, channel=channel, width=NARROW, css="chart-narrow"
            ),
            "latest": latest,
            "stats": {
                "low": readings.localized(units.text(channel, min(values), series["unit"])),
                "high": readings.localized(units.text(channel, max(values), series["unit"])),
                "count": len(values),
            }
            if values and not units.is_state(channel)
            else None,
            "recent": [
                {
                    "measured_at": row["measured_at"],
                    "text": readings.localized(units.text(channel, row["value"], row["unit"])),
                }
                for row in telemetry_reads.sensor_readings(key).values("value", "unit", "measured_at")[:10]
            ],
            "label_max": LABEL_MAX_CHARS,
        },
    )


@require_POST
@role_required(roles.MANAGE_DEVICES)
def sensor_label(
    request: HttpRequest, zone: str, device_type: str, device_id: str, channel: str
) -> HttpResponse:
    """An owner names a sensor (blank: back to the name made from its room and channel)."""
    key = telemetry_reads.SensorKey(zone, device_type, device_id, channel)
    try:
        label = telemetry.set_sensor_label(
            key, request.POST.get("label", ""), actor=_actor(request), interface=DASHBOARD
        )
    except LabelError as error:
        if wants_json(request):
            return JsonResponse({"error": str(error)}, status=400)
        messages.error(request, str(error))
    else:
        if wants_json(request):
            return JsonResponse({"label": label})
        messages.success(request, gettext("Sensor renamed.") if label else gettext("Sensor name reset."))
    return redirect("dashboard:sensor", zone, device_type, device_id, channel)


# --- devices ---------------------------------------------------------------------------------


def _agents_with_forms() -> list[dict[str, Any]]:
    """Each agent with a form's fields for each of its tools the owner left enabled (the tool
    catalogue), and its stock xiaozhi binding."""
    bindings, names = xiaozhi_reads.bindings(), rooms_reads.device_names()
    return [
        {
            **agent,
            "label": names.get(agent["agent_id"], agent["agent_id"]),
            "tools": [
                {**tool, "fields": fields_for(tool["input_schema"])}
                for tool in gateway.enabled_only(agent["agent_id"], agent["tools"])
            ],
            "binding": bindings.get(agent["agent_id"]),
        }
        for agent in agents_reads.agents()
    ]


CALL_KEPT = "dashboard.devices.call"  # the session's last tool call outcome, shown once


def _run_tool(request: HttpRequest) -> tuple[int, dict[str, Any], dict[str, Any]]:
    """Call the posted tool with the posted arguments: (HTTP status, the JSON answer as the
    REST door gives it, the outcome in plain words for the page)."""
    agent_id, tool_name = request.POST.get("agent_id", "")[:64], request.POST.get("tool", "")[:200]
    tool = agents_reads.agent_tool(agent_id, tool_name)
    call = {"agent_id": agent_id, "tool": tool_name}
    if tool is None:
        said = gettext("Agent '%(agent)s' has no tool '%(tool)s'.")
        message = said % {"agent": agent_id, "tool": tool_name}
        return 404, {"error": message}, {**call, "outcome": toolresults.failed(message)}
    arguments, errors = arguments_from(tool["input_schema"], request.POST)
    if errors:
        words = " ".join(f"{toolresults.label(name)}: {error}" for name, error in errors.items())
        answer = {"error": gettext("Check the highlighted fields."), "fields": errors}
        return 400, answer, {**call, "outcome": toolresults.failed(words)}
    caller = Caller(actor=_actor(request), interface=DASHBOARD, audited=True)
    try:
        result = call_agent_tool(agent_id, tool_name, arguments, caller=caller)
    except (CallFailed, ToolRefused) as failure:
        answer = {"error": failure.message}
        return http_status(failure), answer, {**call, "outcome": toolresults.failed(failure.message)}
    return 200, {"result": result}, {**call, "outcome": toolresults.readable_result(result)}


@role_required(roles.CALL_DEVICE_TOOLS)
def devices(request: HttpRequest) -> HttpResponse:
    """The agents, their tools' forms and the broker. A form posted with fetch gets JSON (with
    the outcome's HTML); without script, the outcome is kept for one display and the browser
    sent back to the page (303), so that reloading it never calls the device again."""
    if request.method == "POST":
        status, answer, call = _run_tool(request)
        if wants_json(request):
            html = render_to_string("dashboard/_tool_result.html", call, request=request)
            return JsonResponse({**answer, "html": html}, status=status)
        request.session[CALL_KEPT] = call
        return HttpResponseRedirect(reverse("dashboard:devices") + "#call-result", status=303)
    if request.method != "GET":
        return HttpResponse(status=405, headers={"Allow": "GET, POST"})
    context: dict[str, Any] = {"page": "devices", "call": request.session.pop(CALL_KEPT, None)}
    context["agents"] = _agents_with_forms()
    context["label_max"] = LABEL_MAX_CHARS
    context["ota_url"] = request.build_absolute_uri(reverse("xiaozhi-ota"))
    context["mqtt_workers"] = mqtt_status.workers()
    context["broker_state"] = mqtt_status.broker_state()
    context["mcp_endpoints"] = mcp_endpoints.statuses()
    return render(request, "dashboard/devices.html", context)


def _done(request: HttpRequest, ok: bool, message: str) -> HttpResponse:
    """A devices form's outcome: JSON (fetch), or a message on the Devices page."""
    if wants_json(request):
        return JsonResponse({"message": message} if ok else {"error": message}, status=200 if ok else 400)
    (messages.success if ok else messages.error)(request, message)
    return redirect("dashboard:devices")


@require_POST
@role_required(roles.MANAGE_DEVICES)
def device_label(request: HttpRequest) -> HttpResponse:
    """An owner names a device (blank: back to its default name)."""
    try:
        label = agents.set_agent_label(
            request.POST.get("agent_id", "")[:64],
            request.POST.get("label", ""),
            actor=_actor(request),
            interface=DASHBOARD,
        )
    except LabelError as error:
        return _done(request, False, str(error))
    return _done(request, True, gettext("Device renamed.") if label else gettext("Device name reset."))


@require_POST
@role_required(roles.MANAGE_DEVICES)
def add_device(request: HttpRequest) -> HttpResponse:
    """Bind the stock xiaozhi device showing the code typed."""
    try:
        row = xiaozhi.pair(
            request.POST.get("code", "")[:32],
            actor=_actor(request),
            interface=DASHBOARD,
            name=request.POST.get("name", "")[:100],
        )
    except xiaozhi.PairingError as error:
        return _done(request, False, str(error))
    return _done(
        request,
        True,
        f"Device {row.device_id} added: it connects once it has fetched its configuration, within seconds.",
    )


@require_POST
@role_required(roles.MANAGE_DEVICES)
def unbind_device(request: HttpRequest) -> HttpResponse:
    agent_id = request.POST.get("agent_id", "")[:64]
    if not xiaozhi.unbind(agent_id, actor=_actor(request), interface=DASHBOARD):
        return _done(request, False, gettext("Device %(id)s is not bound.") % {"id": agent_id})
    return _done(
        request, True, gettext("Device %(id)s unbound: its device token no longer works.") % {"id": agent_id}
    )


@require_POST
@role_required(roles.MANAGE_DEVICES)
def remove_device(request: HttpRequest) -> HttpResponse:
    """Remove an offline device's card (and the agent behind it)."""
    agent_id = request.POST.get("agent_id", "")[:64]
    if not xiaozhi.remove_device(agent_id, actor=_actor(request), interface=DASHBOARD):
        return _done(
            request, False, f"Device {agent_id} is online or already gone: only an offline device is removed."
        )
    return _done(
        request,
        True,
        gettext("Device %(id)s removed: to use it again, add or register it anew.") % {"id": agent_id},
    )


@require_POST
@role_required(roles.MANAGE_DEVICES)
def approve_device(request: HttpRequest) -> HttpResponse:
    """Approve a pending agent (one that announced itself over MQTT, or an unknown device let
    in by DEVICES_ACCEPT_UNKNOWN): its tools are discovered and offered from then on."""
    agent_id = request.POST.get("agent_id", "")[:64]
    if not agents.approve_agents([agent_id], actor=_actor(request), interface=DASHBOARD):
        return _done(request, False, gettext("Device %(id)s is not waiting for approval.") % {"id": agent_id})
    return _done(
        request,
        True,
        gettext("Device %(id)s approved: its tools are offered once discovered.") % {"id": agent_id},
    )


# --- activity --------------------------------------------------------------------------------


@require_GET
@role_required(roles.VIEW_ACTIVITY)
def activity(request: HttpRequest) -> HttpResponse:
    interface = request.GET.get("interface", "")
    if interface not in Event.Interface.values:
        interface = ""
    filters = {
        "interface": interface,
        "action": request.GET.get("action", "").strip()[:64],
        "actor": request.GET.get("actor", "").strip()[:150],
        "target": request.GET.get("target", "").strip()[:200],
    }
    page, rows = activity_reads.page(filters, request.GET.get("page"))
    query = urlencode({k: v for k, v in filters.items() if v})
    return render(
        request,
        "dashboard/activity.html",
        {
            "page": "activity",
            "events": page,
            "rows": rows,
            "filters": filters,
            "interfaces": Event.Interface.values,
            "actions": audit_reads.event_actions(),
            "actors": audit_reads.event_actors(),
            "query": query,
        },
    )
