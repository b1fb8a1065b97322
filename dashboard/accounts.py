"""The Accounts page (owners only): the household's accounts with their roles; add one,
change a role, deactivate one. Thin views over `dashboard.account_services`."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext
from django.views.decorators.http import require_GET, require_POST

from common import roles
from dashboard import account_services as accounts_
from dashboard.access import role_required


@require_GET
@role_required(roles.MANAGE_ACCOUNTS)
def accounts(request: HttpRequest) -> HttpResponse:
    context = {"page": "accounts", "accounts": accounts_.account_rows(), "roles": roles.ROLES}
    return render(request, "dashboard/accounts.html", context)


@require_POST
@role_required(roles.MANAGE_ACCOUNTS)
def add_account(request: HttpRequest) -> HttpResponse:
    username = request.POST.get("username", "").strip()[:150]
    role = request.POST.get("role", "")
    try:
        accounts_.create_account(
            username, request.POST.get("password", ""), role, by=request.user.get_username()
        )
    except accounts_.AccountError as error:
        messages.error(request, str(error))
    else:
        messages.success(
            request, gettext("Account '%(name)s' added as %(role)s.") % {"name": username, "role": role}
        )
    return redirect("dashboard:accounts")


@require_POST
@role_required(roles.MANAGE_ACCOUNTS)
def change_role(request: HttpRequest, username: str) -> HttpResponse:
    role = request.POST.get("role", "")
    try:
        changed = accounts_.change_role(username, role, by=request.user.get_username())
    except accounts_.AccountError as error:
        messages.error(request, str(error))
    else:
        messages.success(
            request,
            (
                gettext("'%(name)s' is now %(role)s.")
                if changed
                else gettext("'%(name)s' was already %(role)s.")
            )
            % {"name": username, "role": role},
        )
    return redirect("dashboard:accounts")


@require_POST
@role_required(roles.MANAGE_ACCOUNTS)
def deactivate(request: HttpRequest, username: str) -> HttpResponse:
    try:
        accounts_.deactivate(username, by=request.user.get_username())
    except accounts_.AccountError as error:
        messages.error(request, str(error))
    else:
        messages.success(
            request, gettext("'%(name)s' is deactivated: it can no longer log in.") % {"name": username}
        )
    return redirect("dashboard:accounts")
