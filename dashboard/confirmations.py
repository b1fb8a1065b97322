"""Dangerous tool calls waiting for the owner (`mcp_endpoint.confirmation`): the Requests page,
where each is approved or denied, and the banner every dashboard page shows while one waits.
The call that waits records the outcome in its audit event (approved by whom, denied, lapsed)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from mcp_endpoint import confirmation


@require_GET
@login_required
def requests(request: HttpRequest) -> HttpResponse:
    context = {
        "page": "requests",
        "open": confirmation.open_requests(),
        "recent": confirmation.recent_requests(),
    }
    return render(request, "dashboard/requests.html", context)


@require_POST
@login_required
def decide(request: HttpRequest, pk: int) -> HttpResponse:
    approve = request.POST.get("decision") == "approve"
    if confirmation.decide(pk, approve=approve, by=request.user.get_username()):
        done = "Approved: the action runs now." if approve else "Denied: nothing was done."
        messages.success(request, done)
    else:
        messages.error(request, "That request no longer waits: it was decided or it lapsed.")
    return redirect("dashboard:requests")


def waiting_requests(request: HttpRequest) -> dict[str, int]:
    """Context processor: how many requests wait, for the banner (logged-in pages only)."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    return {"waiting_requests": confirmation.waiting_count()}
