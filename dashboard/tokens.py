"""The Access page (owners only): every token a person made (`create_mcp_token`, the admin, the
demo, this page) with its scopes and last use, beside the OAuth apps given access. An owner
creates a token here, its secret shown once in the answer to the form and nowhere else (not
stored, not logged, not cached), and revokes tokens here. Thin views over
`mcp_endpoint.auth.tokens` and `mcp_endpoint.auth.oauth.grants`, which audit both."""

from __future__ import annotations

from datetime import timedelta

from django import forms
from django.contrib import messages
from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.translation import gettext, gettext_lazy
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from audit.models import Event
from common import roles
from dashboard.access import role_required
from mcp_endpoint.auth import tokens
from mcp_endpoint.auth.oauth import grants
from mcp_endpoint.auth.scopes import scopes as declared_scopes

EXPIRY_CHOICES = [
    ("", gettext_lazy("Never")),
    ("30", gettext_lazy("In 30 days")),
    ("90", gettext_lazy("In 90 days")),
    ("365", gettext_lazy("In a year")),
]


class TokenForm(forms.Form):
    name = forms.CharField(
        max_length=100, strip=True, error_messages={"required": gettext_lazy("Give the token a name.")}
    )
    scopes = forms.MultipleChoiceField(
        choices=lambda: [(s.name, s.name) for s in declared_scopes.all()],  # declared as apps load
        widget=forms.CheckboxSelectMultiple,
        error_messages={"required": gettext_lazy("Choose at least one scope.")},
    )
    expires_days = forms.TypedChoiceField(
        choices=EXPIRY_CHOICES, coerce=int, empty_value=None, required=False
    )


def _page(request: HttpRequest, form: TokenForm, *, secret: str = "", status: int = 200) -> HttpResponse:
    context = {
        "page": "access",
        "form": form,
        "scopes": declared_scopes.all(),
        "chosen": form["scopes"].value() or ["read"],
        "expiry_choices": EXPIRY_CHOICES,
        "tokens": tokens.listed_tokens(),
        "apps": grants.connected_apps() if roles.can(request.user, roles.CONNECT_APPS) else None,
        "secret": secret,
    }
    return render(request, "dashboard/access.html", context, status=status)


@require_GET
@role_required(roles.MANAGE_TOKENS)
def access(request: HttpRequest) -> HttpResponse:
    return _page(request, TokenForm())


@never_cache  # the answer holds the secret: no cache may keep it
@require_POST
@role_required(roles.MANAGE_TOKENS)
def create_token(request: HttpRequest) -> HttpResponse:
    """Create the token and answer with the page showing its secret, this once (a redirect would
    have to keep the secret somewhere until the next page)."""
    form = TokenForm(request.POST)
    if not form.is_valid():
        return _page(request, form, status=400)
    assert isinstance(request.user, User)  # role_required
    days = form.cleaned_data["expires_days"]
    token, secret = tokens.create_token(
        form.cleaned_data["name"],
        form.cleaned_data["scopes"],
        actor=request.user.get_username(),
        interface=Event.Interface.DASHBOARD,
        owner=request.user,
        expires_at=timezone.now() + timedelta(days=days) if days else None,
    )
    messages.success(
        request,
        gettext("Token '%(name)s' created. Copy it now: it is not shown again.") % {"name": token.name},
    )
    return _page(request, TokenForm(), secret=secret)


@require_POST
@role_required(roles.MANAGE_TOKENS)
def revoke_token(request: HttpRequest, pk: int) -> HttpResponse:
    token = tokens.revoke_token(pk, actor=request.user.get_username(), interface=Event.Interface.DASHBOARD)
    if token is None:
        messages.error(request, gettext("That token is already revoked or does not exist."))
    else:
        messages.success(
            request,
            gettext("Token '%(name)s' is revoked: it no longer opens the hub.") % {"name": token.name},
        )
    return redirect("dashboard:access")
