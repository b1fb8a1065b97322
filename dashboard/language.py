"""The language of a page: an account's own choice (`AccountLanguage`) over what Django's
LocaleMiddleware read from the language cookie or the browser's Accept-Language.

`choose_language` is the switcher's service: it saves the choice to the signed-in account (one
transaction with its audit event); the view also sets Django's language cookie so the choice holds
before signing in and after signing out."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db import transaction
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, HttpResponseRedirect
from django.urls import reverse
from django.utils import translation
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from audit.models import Event
from audit.services import record_event
from dashboard.models import AccountLanguage

LANGUAGE_CODES = frozenset(code for code, _name in settings.LANGUAGES)


def account_language(user: AbstractBaseUser | AnonymousUser) -> str | None:
    """The language `user` chose, None when they never chose (or are not signed in)."""
    if not user.is_authenticated:
        return None
    return AccountLanguage.objects.filter(user_id=user.pk).values_list("language", flat=True).first()


def choose_language(user: AbstractBaseUser | AnonymousUser, language: str) -> None:
    """Keep `language` as the signed-in `user`'s choice; a ValueError names an unknown one."""
    if language not in LANGUAGE_CODES:
        raise ValueError(f"language: '{language}' is not one of {', '.join(sorted(LANGUAGE_CODES))}")
    if not user.is_authenticated:
        return
    with transaction.atomic():
        before = account_language(user)
        if before == language:
            return
        AccountLanguage.objects.update_or_create(user_id=user.pk, defaults={"language": language})
        record_event(
            actor=user.get_username(),
            interface=Event.Interface.DASHBOARD,
            action="account.language",
            target=f"account:{user.get_username()}",
            before={"language": before},
            after={"language": language},
        )


def account_language_middleware(
    get_response: Callable[[HttpRequest], HttpResponse],
) -> Callable[..., HttpResponse]:
    """After AuthenticationMiddleware: a signed-in account's choice replaces the language
    LocaleMiddleware picked (which still writes Content-Language and Vary on the answer)."""

    def middleware(request: HttpRequest) -> HttpResponse:
        chosen = account_language(request.user)
        if chosen:
            translation.activate(chosen)
            request.LANGUAGE_CODE = chosen
        return get_response(request)

    return middleware


@require_POST
def switch_language(request: HttpRequest) -> HttpResponse:
    """The footer's switcher, for everyone: the choice goes to the account when signed in and to
    Django's language cookie always, then back to the page it was made on."""
    language = request.POST.get("language", "")
    back = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(
        back, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        back = reverse("dashboard:home")
    try:
        choose_language(request.user, language)
    except ValueError as unknown:
        return HttpResponseBadRequest(str(unknown))
    response = HttpResponseRedirect(back)
    response.set_cookie(
        settings.LANGUAGE_COOKIE_NAME,
        language,
        max_age=settings.LANGUAGE_COOKIE_AGE,
        samesite="Lax",
        secure=request.is_secure(),
        httponly=True,
    )
    return response
