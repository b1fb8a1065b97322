"""What the apps' REST routers share: the scope check on the caller that `homehub.api`'s
authentication established (a token's scopes, or every scope for a logged-in homeowner)."""

from __future__ import annotations

from django.http import HttpRequest
from ninja.errors import HttpError


class Forbidden(HttpError):
    def __init__(self, message: str) -> None:
        super().__init__(403, message)


def need(request: HttpRequest, scope: str) -> str:
    """Refuse (403) a caller whose token lacks `scope`; returns the actor for the audit trail."""
    if scope not in getattr(request, "api_scopes", frozenset()):
        raise Forbidden(f"This token lacks the '{scope}' scope needed here.")
    return request.api_actor
