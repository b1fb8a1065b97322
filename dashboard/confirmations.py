"""Dangerous tool calls waiting for the owner (`mcp_endpoint.confirmation`): the Requests page,
where each is approved or denied, and the banner every dashboard page shows while one waits.
The call that waits records the outcome in its audit event (approved by whom, denied, lapsed)."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from common import roles
from dashboard.access import forbidden, role_required
from mcp_endpoint import confirmation
from mcp_endpoint.models import PendingConfirmation
from mcp_endpoint.registry import registry


@require_GET
@role_required(roles.DECIDE_REQUESTS)
def requests(request: HttpRequest) -> HttpResponse:
    context = {
        "page": "requests",
        "open": confirmation.open_requests(),
        "recent": confirmation.recent_requests(),
    }
    return render(request, "dashboard/requests.html", context)


def needed_for(pk: int) -> str | None:
    """What the call waiting as request `pk` needs of whoever decides it (they may decide only
    what they could do themselves); None when there is no such request."""
    name = PendingConfirmation.objects.filter(pk=pk).values_list("tool", flat=True).first()
    if name is None:
        return None
    tool = registry.get_declared(name)
    return roles.capability_for_tool(name, tool.scope if tool is not None else None)


@require_POST
@role_required(roles.DECIDE_REQUESTS)
def decide(request: HttpRequest, pk: int) -> HttpResponse:
    needed = needed_for(pk)
    if needed is not None and not roles.can(request.user, needed):
        return forbidden(request, needed)
    approve = request.POST.get("decision") == "approve"
    if confirmation.decide(pk, approve=approve, by=request.user.get_username()):
        done = "Approved: the action runs now." if approve else "Denied: nothing was done."
        messages.success(request, done)
    else:
        messages.error(request, "That request no longer waits: it was decided or it lapsed.")
    return redirect("dashboard:requests")


def waiting_requests(request: HttpRequest) -> dict[str, int]:
    """Context processor: how many requests wait, for the banner (pages of accounts that may
    decide them)."""
    if not roles.can(getattr(request, "user", None), roles.DECIDE_REQUESTS):
        return {}
    return {"waiting_requests": confirmation.waiting_count()}
