"""The Automations pages: everyone with a role reads them (the list, an automation with its
versions and runs, as `read` REST calls do); owners (`manage_automations`) write: the editor
(fields for the common shapes, or the definition's JSON), its dry run (nothing saved), enabling
and disabling (the owner becomes the one whose rights the runs act with), restoring a version,
deleting. Every write goes through `automations.authoring`."""

from __future__ import annotations

import json
from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.utils.translation import gettext, gettext_noop
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from audit.models import Event
from automations import authoring, selectors
from automations.automation_selectors import automation_detail, automation_list
from automations.definition import WEEKDAYS
from automations.dry_run import DAYS_MAX, dry_run
from automations.errors import AutomationError, DefinitionError
from automations.schemas import DryRunOut
from common import roles
from dashboard import automation_form
from dashboard.access import role_required
from devices.home import selectors as home_reads
from mcp_endpoint.auth.scopes import scopes

DASHBOARD = Event.Interface.DASHBOARD
DRY_RUN_DAYS = 7


def _author_scopes(request: HttpRequest) -> frozenset[str]:
    """What the person may have an automation do: their role's share of the scopes."""
    return roles.scopes_within(roles.role_of(request.user), scopes.names())


def _page(name: str) -> str:
    return reverse("dashboard:automation") + "?" + urlencode({"name": name})


@require_GET
@role_required(roles.SEE_HOME)
def automations(request: HttpRequest) -> HttpResponse:
    return render(
        request, "dashboard/automations.html", {"page": "automations", "automations": automation_list()}
    )


@require_GET
@role_required(roles.SEE_HOME)
def automation(request: HttpRequest) -> HttpResponse:
    found = automation_detail(request.GET.get("name", ""))
    if found is None:
        raise Http404("No such automation.")
    runs = [{**run, "steps": trace_steps(run["trace"])} for run in found["runs"]]
    return render(
        request,
        "dashboard/automation.html",
        {
            "page": "automations",
            "automation": found,
            "runs": runs,
            "definition": json.dumps(found["definition"], indent=2, ensure_ascii=False),
            "versions": [
                {**v, "json": json.dumps(v["definition"], indent=2, ensure_ascii=False)}
                for v in found["versions"]
            ],
        },
    )


def trace_steps(trace: list[Any]) -> list[dict[str, Any]]:
    """A run's trace as lines to read: what fired it, each condition's result, each action's
    outcome (an entry of another shape is shown as its JSON); each step's `label` is its kind
    in the page's language."""
    steps = _trace_steps(trace)
    return [{**step, "label": gettext(STEP_LABELS[step["kind"]])} for step in steps]


# The kinds of a trace's steps, marked for the catalog (translated when shown).
STEP_LABELS = {
    "trigger": gettext_noop("trigger"),
    "condition": gettext_noop("condition"),
    "action": gettext_noop("action"),
    "stopped": gettext_noop("stopped"),
    "step": gettext_noop("step"),
}


def _trace_steps(trace: list[Any]) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = []
    for entry in trace:
        if not isinstance(entry, dict):
            steps.append({"kind": "step", "text": json.dumps(entry, ensure_ascii=False), "ok": None})
        elif "trigger" in entry:
            steps.append({"kind": "trigger", "text": _json(entry["trigger"]), "ok": None})
        elif "action" in entry:
            said = entry.get("error") if entry.get("ok") is False else entry.get("result")
            steps.append(
                {"kind": "action", "text": str(entry["action"]), "said": said or "", "ok": entry.get("ok")}
            )
        elif "condition" in entry:
            steps.append(
                {
                    "kind": "condition",
                    "text": _json(entry["condition"]),
                    "said": entry.get("why", ""),
                    "ok": entry.get("ok"),
                }
            )
        elif "stopped" in entry:
            steps.append({"kind": "stopped", "text": str(entry["stopped"]), "ok": False})
        else:
            steps.append(
                {"kind": "step", "text": _json(entry), "said": entry.get("error", ""), "ok": entry.get("ok")}
            )
    return steps


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


@require_http_methods(["GET", "POST"])
@role_required(roles.MANAGE_AUTOMATIONS)
def editor(request: HttpRequest) -> HttpResponse:
    """GET: a new automation, or `name`'s to edit. POST: save (`enable` too, if ticked) or,
    with the Dry run button, show what it would have done, saving nothing."""
    if request.method == "GET":
        name = request.GET.get("name", "")
        found = automation_detail(name) if name else None
        if name and found is None:
            raise Http404("No such automation.")
        fields = automation_form.fields_from_definition(found["definition"]) if found else None
        definition_json = ""
        if found and fields is None:
            definition_json = json.dumps(found["definition"], indent=2, ensure_ascii=False)
        return _editor(
            request, fields or {"trigger_type": "light"}, definition_json=definition_json, editing=found
        )
    posted = automation_form.definition_from_post(request.POST)
    fields = automation_form.fields_from_post(request.POST)
    context: dict[str, Any] = {"definition_json": request.POST.get("definition_json", "")}
    errors = posted.errors
    if posted.data is not None:
        try:
            if "dry_run" in request.POST:
                context["dry_run"] = _shown(
                    dry_run(posted.data, _days(request), scopes=_author_scopes(request))
                )
            else:
                row = authoring.save_automation(
                    posted.data,
                    actor=request.user.get_username(),
                    interface=DASHBOARD,
                    scopes=_author_scopes(request),
                    user=request.user,
                    enable=request.POST.get("enable") == "on",
                )
                messages.success(
                    request,
                    gettext("Automation '%(name)s' saved (version %(version)s).")
                    % {"name": row.name, "version": row.version},
                )
                return redirect(_page(row.name))
        except DefinitionError as exc:
            errors = exc.errors
        except AutomationError as exc:
            errors = [str(exc)]
    placed = automation_form.placed_errors(errors, [] if posted.from_json else posted.action_rows)
    if posted.from_json:
        placed = {"definition": errors} if errors else {}
    status = 400 if errors else 200
    return _editor(request, fields, errors=placed, status=status, **context)


def _shown(out: DryRunOut) -> dict[str, Any]:
    """A dry run with each tool action's arguments as JSON, for the page."""
    fired = [
        {
            **firing,
            "actions": [{**a, "arguments_json": _json(a.get("arguments", {}))} for a in firing["actions"]],
        }
        for firing in out["fired"]
    ]
    return {**out, "fired": fired}


def _days(request: HttpRequest) -> int:
    try:
        days = int(request.POST.get("days", DRY_RUN_DAYS))
    except ValueError:
        raise AutomationError("days: " + gettext("must be 1 to %(n)s") % {"n": DAYS_MAX}) from None
    return days


def _editor(
    request: HttpRequest,
    fields: dict[str, Any],
    *,
    errors: dict[str, list[str]] | None = None,
    status: int = 200,
    editing: Any = None,
    definition_json: str = "",
    dry_run: Any = None,
) -> HttpResponse:
    rows = [
        {
            "index": row,
            "kind": fields.get(f"action_{row}_kind", ""),
            "tool": fields.get(f"action_{row}_tool", ""),
            "arguments": fields.get(f"action_{row}_arguments", ""),
            "scene": fields.get(f"action_{row}_scene", ""),
            "notify": fields.get(f"action_{row}_notify", ""),
            "title": fields.get(f"action_{row}_title", ""),
            "level": fields.get(f"action_{row}_level", "info"),
            "errors": (errors or {}).get(f"action_{row}", []),
        }
        for row in range(automation_form.ACTION_ROWS)
    ]
    return render(
        request,
        "dashboard/automation_edit.html",
        {
            "page": "automations",
            "f": fields,
            "editing": editing,
            "errors": errors or {},
            "action_rows": rows,
            "trigger_kinds": automation_form.TRIGGER_KINDS,
            "action_kinds": automation_form.ACTION_KINDS,
            "levels": automation_form.LEVELS,
            "weekdays": WEEKDAYS,
            "definition_json": definition_json,
            "dry_run": dry_run,
            "days": request.POST.get("days", DRY_RUN_DAYS),
            "days_max": DAYS_MAX,
            "lights": home_reads.lights(),
            "people": home_reads.people(),
            "scenes": selectors.scenes(),
        },
        status=status,
    )


@require_POST
@role_required(roles.MANAGE_AUTOMATIONS)
def set_enabled(request: HttpRequest) -> HttpResponse:
    """The list's switch: enable (this owner's rights for its runs) or disable."""
    name = request.POST.get("name", "")
    enabled = request.POST.get("enabled") == "on"
    version = request.POST.get("version", "")
    try:
        authoring.set_enabled(
            name,
            enabled,
            user=request.user,
            actor=request.user.get_username(),
            interface=DASHBOARD,
            version=int(version) if version.isdigit() else None,
        )
    except AutomationError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(
            request,
            (
                gettext("Automation '%(name)s' enabled.")
                if enabled
                else gettext("Automation '%(name)s' disabled.")
            )
            % {"name": name},
        )
    return redirect(_page(name) if request.POST.get("from") == "automation" else "dashboard:automations")


@require_POST
@role_required(roles.MANAGE_AUTOMATIONS)
def restore(request: HttpRequest) -> HttpResponse:
    name = request.POST.get("name", "")
    number = request.POST.get("number", "")
    try:
        row = authoring.restore_version(
            name,
            int(number) if number.isdigit() else 0,
            actor=request.user.get_username(),
            interface=DASHBOARD,
            user=request.user,
            scopes=_author_scopes(request),
        )
    except AutomationError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(
            request,
            gettext("Version %(number)s of '%(name)s' restored as version %(version)s.")
            % {"number": number, "name": name, "version": row.version},
        )
    return redirect(_page(name))


@require_POST
@role_required(roles.MANAGE_AUTOMATIONS)
def delete(request: HttpRequest) -> HttpResponse:
    name = request.POST.get("name", "")
    try:
        authoring.delete_automation(name, actor=request.user.get_username(), interface=DASHBOARD)
    except AutomationError as exc:
        messages.error(request, str(exc))
        return redirect(_page(name))
    messages.success(request, gettext("Automation '%(name)s' deleted.") % {"name": name})
    return redirect("dashboard:automations")
