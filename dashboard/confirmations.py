"""Dangerous tool calls waiting for a person (`mcp_endpoint.controls.confirmation`): the Requests page,
each request's own page (the one handed to an MCP client as a URL-mode elicitation), where it
is approved or denied, and the banner every dashboard page shows while one waits. The call
that waits records the outcome in its audit event (approved by whom, denied, lapsed). Who may
decide is an owner who could make the call themselves (`needed_for`); what a decision does is
`confirmation.decide`'s to say, and these views only carry the person's word to it."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext
from django.views.decorators.http import require_GET, require_http_methods

from common import roles
from dashboard.access import forbidden, role_required
from dashboard.activity import device_labels, light_labels
from dashboard.sentences import request_sentence
from mcp_endpoint.controls import confirmation
from mcp_endpoint.engine.registry import registry
from mcp_endpoint.models import PendingConfirmation


@require_GET
@role_required(roles.DECIDE_REQUESTS)
def requests(request: HttpRequest) -> HttpResponse:
    labels, devices = light_labels(), device_labels()
    context = {
        "page": "requests",
        "open": [(row, sentence(row, labels, devices)) for row in confirmation.open_requests()],
        "recent": [(row, sentence(row, labels, devices)) for row in confirmation.recent_requests()],
    }
    return render(request, "dashboard/requests.html", context)


def sentence(row: PendingConfirmation, labels: dict[str, str], devices: dict[str, str]) -> str:
    """ "Claude (through /mcp) asks to disarm the alarm": the request as the person reads it."""
    tool = registry.get_declared(row.tool)
    return request_sentence(
        row.actor,
        row.interface,
        row.tool,
        row.arguments,
        title=tool.title if tool else None,
        light_labels=labels,
        device_labels=devices,
    )


def needed_for(pk: int) -> str | None:
    """What the call waiting as request `pk` needs of whoever decides it (they may decide only
    what they could do themselves); None when there is no such request."""
    name = PendingConfirmation.objects.filter(pk=pk).values_list("tool", flat=True).first()
    if name is None:
        return None
    tool = registry.get_declared(name)
    return roles.capability_for_tool(name, tool.scope if tool is not None else None)


@require_http_methods(["GET", "POST"])
@role_required(roles.DECIDE_REQUESTS)
def request_page(request: HttpRequest, pk: int) -> HttpResponse:
    """One request, every argument shown, with Approve and Deny while it waits (for an owner who
    could make the call themselves)."""
    row = confirmation.request(pk)
    if row is None:
        raise Http404("No such request")
    if request.method == "POST":
        needed = needed_for(pk)
        if needed is not None and not roles.can(request.user, needed):
            return forbidden(request, needed)
        approve = request.POST.get("decision") == "approve"
        if confirmation.decide(pk, approve=approve, by=request.user.get_username()):
            if approve:
                messages.success(request, gettext("Approved: the action runs now."))
            else:
                messages.success(request, gettext("Denied: nothing was done."))
        else:
            messages.error(request, gettext("That request no longer waits: it was decided or it lapsed."))
        if request.POST.get("back") == "request":
            return redirect("dashboard:request", pk)
        return redirect("dashboard:requests")
    details = confirmation.request_detail(registry.get_declared(row.tool), row.arguments)
    context = {
        "page": "requests",
        "req": row,
        "sentence": sentence(row, light_labels(), device_labels()),
        "waiting": confirmation.is_open(row),
        "details": details,
    }
    return render(request, "dashboard/request.html", context)


def waiting_requests(request: HttpRequest) -> dict[str, int]:
    """Context processor: how many requests wait, for the banner (pages of accounts that may
    decide them)."""
    if not roles.can(getattr(request, "user", None), roles.DECIDE_REQUESTS):
        return {}
    return {"waiting_requests": confirmation.waiting_count()}
