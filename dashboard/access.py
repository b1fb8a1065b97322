"""Who may use which dashboard page or form: `role_required(capability)` on every view, asking
`common.roles`; a refusal is a 403 saying which role is needed (a page, or JSON
`{"detail": ...}` for the pages' fetch requests). The templates learn what the account may do
from `household_role`, so the navigation and the forms show only what it may use."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar, cast

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.http.response import HttpResponseBase
from django.shortcuts import render

from common import roles

View = TypeVar("View", bound=Callable[..., HttpResponseBase])


def wants_json(request: HttpRequest) -> bool:
    return "application/json" in request.headers.get("Accept", "")


def forbidden(request: HttpRequest, capability: str) -> HttpResponse:
    """403: the account's role may not do `capability`."""
    message = roles.refusal(roles.role_of(request.user), capability)
    if wants_json(request):
        return JsonResponse({"detail": message}, status=403)
    context = {"page": "", "message": message, "needed": roles.least_role(capability)}
    return render(request, "dashboard/forbidden.html", context, status=403)


def role_required(capability: str) -> Callable[[View], View]:
    """The view needs a logged-in account (else the login page) whose role may do
    `capability` (else `forbidden`)."""

    def decorate(view: View) -> View:
        @wraps(view)
        def guarded(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
            if not roles.can(request.user, capability):
                return forbidden(request, capability)
            return view(request, *args, **kwargs)

        return cast(View, login_required(guarded))

    return decorate


def household_role(request: HttpRequest) -> dict[str, Any]:
    """Context processor: the account's role and `may`, each capability it holds set to True
    (`{% if may.arm_alarm %}`)."""
    role = roles.role_of(getattr(request, "user", None))
    if role is None:
        return {}
    return {"role": role, "may": dict.fromkeys(roles.capabilities(role), True)}
