"""What the apps' REST routers share: the scope check on the caller that `homehub.api`'s
authentication established (a token's scopes; for a logged-in person, their household role's
capabilities, `common.roles`),
bounded identifiers in paths and filters, page sizes, the error body, and naive datetimes
read in the hub's time zone."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any

from django.http import HttpRequest
from django.utils import timezone
from django.utils.translation import gettext
from ninja import Path, Query, Schema
from ninja.errors import HttpError

from common import roles

# Identifiers travel in paths and filters: printable text, bounded.
Name = Annotated[str, Path(pattern=r"^[^\x00-\x1f\x7f]{1,200}$")]
Filter = Annotated[str, Query(pattern=r"^[^\x00-\x1f\x7f]{0,200}$")]
Limit = Annotated[int, Query(ge=1, le=500, description="Page size.")]
Offset = Annotated[int, Query(ge=0, le=1_000_000_000, description="Items to skip.")]


class Error(Schema):
    detail: Any


@dataclass(frozen=True)
class RestCaller:
    """Who calls and what they may do: what `homehub.api`'s authenticators return, so that
    django-ninja keeps it as `request.auth` for `need`."""

    actor: str
    scopes: frozenset[str]
    by_token: bool = False  # a token's holder (a script, an LLM), not a logged-in person
    role: str | None = None  # a logged-in person's household role; None for a token


class Forbidden(HttpError):
    def __init__(self, message: str) -> None:
        super().__init__(403, message)


def rest_caller(request: HttpRequest) -> RestCaller:
    """Who the authentication found (django-ninja keeps it as `request.auth`)."""
    caller = getattr(request, "auth", None)
    if not isinstance(caller, RestCaller):
        raise Forbidden(gettext("Authentication required."))
    return caller


def need(request: HttpRequest, scope: str, capability: str | None = None) -> str:
    """Refuse (403) a token that lacks `scope`, or a logged-in person whose role may not do
    `capability` (by default the one `scope` stands for: `common.roles.capability_for_scope`);
    returns the actor for the audit trail."""
    caller = rest_caller(request)
    if scope not in caller.scopes:
        raise Forbidden(gettext("This token lacks the '%(scope)s' scope needed here.") % {"scope": scope})
    if caller.role is not None:
        wanted = capability or roles.capability_for_scope(scope)
        if wanted not in roles.capabilities(caller.role):
            raise Forbidden(roles.refusal(caller.role, wanted))
    return caller.actor


def aware(value: datetime | None) -> datetime | None:
    if value is not None and timezone.is_naive(value):
        return timezone.make_aware(value, timezone.get_default_timezone())
    return value
