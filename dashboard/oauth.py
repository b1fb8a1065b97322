"""The owner's OAuth pages: the consent page of the hub's authorization endpoint (a hosted
connector sends the owner here, logged in first) and the revoking of an app
(the Access page, `dashboard.tokens`, lists the apps).
Thin views over `mcp_endpoint.auth.oauth.consent` and `.grants`, which audit granting and
revoking."""

from __future__ import annotations

from csp.decorators import csp_replace
from django.contrib import messages
from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from audit.models import Event
from common import roles
from dashboard.access import role_required
from mcp_endpoint.auth.oauth import consent, grants

DASHBOARD = Event.Interface.DASHBOARD


# The answer redirects the browser to the app's redirect URI: a form-action of 'self' would
# stop that redirect.
@csp_replace({"form-action": None})
@role_required(roles.CONNECT_APPS)
@require_http_methods(["GET", "POST"])
def authorize(request: HttpRequest) -> HttpResponse:
    """GET: what the client asks for, each scope a checkbox; POST: the owner's answer."""
    uri = request.build_absolute_uri()
    try:
        asked = consent.review(uri)
    except consent.Refused as refused:
        context = {"page": "access", "error": refused.description}
        return render(request, "dashboard/oauth_consent.html", context, status=400)
    except consent.SendBack as back:
        return redirect(back.location)
    if request.method == "GET":
        return render(request, "dashboard/oauth_consent.html", {"page": "access", "asked": asked})
    if request.POST.get("decision") != "allow":
        return redirect(consent.deny(uri))
    assert isinstance(request.user, User)  # role_required
    location, _grant = consent.approve(uri, request.user, request.POST.getlist("scope"))
    return redirect(location)


@require_GET
def connected_apps(request: HttpRequest) -> HttpResponse:
    """Connected apps moved to the Access page, beside the tokens (old links still work)."""
    return redirect("dashboard:access", permanent=True)


@require_POST
@role_required(roles.CONNECT_APPS)
def revoke_app(request: HttpRequest, grant_id: int) -> HttpResponse:
    app = grants.revoke_app(grant_id, actor=request.user.get_username(), interface=DASHBOARD)
    if app is None:
        messages.error(request, gettext("That app has no access to revoke."))
    else:
        messages.success(
            request, gettext("%(app)s no longer has access to the hub.") % {"app": app.client_name}
        )
    return redirect("dashboard:access")
