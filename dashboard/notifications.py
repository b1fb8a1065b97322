"""The household's notifications (`automations.notifications`): the Notifications page, where
they are dismissed, and the banner every page shows while any the account may see is unread.
Members and owners see them; approval notices, owners only."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from automations.notifications import selectors, services
from common import roles
from dashboard.access import role_required

SHOWN = 100


@require_GET
@role_required(roles.READ_NOTIFICATIONS)
def notifications(request: HttpRequest) -> HttpResponse:
    rows = selectors.for_role(roles.role_of(request.user))
    context = {
        "page": "notifications",
        "unread": list(rows.filter(dismissed_at=None)[:SHOWN]),
        "read": list(rows.exclude(dismissed_at=None)[:SHOWN]),
    }
    return render(request, "dashboard/notifications.html", context)


@require_POST
@role_required(roles.READ_NOTIFICATIONS)
def dismiss(request: HttpRequest) -> HttpResponse:
    """Dismiss one notification (`pk`), or every unread one the account may see (no `pk`)."""
    role, by = roles.role_of(request.user), request.user.get_username()
    pk = request.POST.get("pk", "")
    if pk.isdigit():
        services.dismiss(int(pk), role=role, by=by)
    else:
        services.dismiss_all(role=role, by=by)
    return redirect("dashboard:notifications")


def unread_notifications(request: HttpRequest) -> dict[str, int]:
    """Context processor: how many notifications the account may see are unread, for the banner."""
    role = roles.role_of(getattr(request, "user", None))
    if roles.READ_NOTIFICATIONS not in roles.capabilities(role):
        return {}
    return {"unread_notifications": selectors.unread_count(role)}
