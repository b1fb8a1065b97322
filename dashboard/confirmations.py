"""Dangerous tool calls waiting for a person (`mcp_endpoint.confirmation`): the Requests page,
each request's own page (the one handed to an MCP client as a URL-mode elicitation), where it
is approved or denied, and the banner every dashboard page shows while one waits. The call
that waits records the outcome in its audit event (approved by whom, denied, lapsed). Who may
decide is `confirmation.decide`'s to say; these views only carry the person's word to it."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

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


@require_http_methods(["GET", "POST"])
@login_required
def request_page(request: HttpRequest, pk: int) -> HttpResponse:
    """One request, every argument shown, with Approve and Deny while it waits."""
    row = confirmation.request(pk)
    if row is None:
        raise Http404("No such request")
    if request.method == "POST":
        approve = request.POST.get("decision") == "approve"
        if confirmation.decide(pk, approve=approve, by=request.user.get_username()):
            done = "Approved: the action runs now." if approve else "Denied: nothing was done."
            messages.success(request, done)
        else:
            messages.error(request, "That request no longer waits: it was decided or it lapsed.")
        if request.POST.get("back") == "request":
            return redirect("dashboard:request", pk)
        return redirect("dashboard:requests")
    context = {"page": "requests", "req": row, "waiting": confirmation.is_open(row)}
    return render(request, "dashboard/request.html", context)


def waiting_requests(request: HttpRequest) -> dict[str, int]:
    """Context processor: how many requests wait, for the banner (logged-in pages only)."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    return {"waiting_requests": confirmation.waiting_count()}
