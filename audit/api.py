"""The audit trail's REST router."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from django.http import HttpRequest
from ninja import Query, Router, Schema

from audit import selectors
from audit.models import Event
from common import roles
from common.rest import Filter, Limit, Offset, need

router = Router(tags=["events"])


class EventOut(Schema):
    id: int
    at: datetime
    actor: str
    interface: str
    action: str
    target: str
    before: Any = None
    after: Any = None


class EventPage(Schema):
    count: int
    limit: int
    offset: int
    items: list[EventOut]


@router.get("/events", response=EventPage, summary="The audit trail, newest first")
def list_events(
    request: HttpRequest,
    interface: Annotated[Event.Interface | None, Query()] = None,
    actor: Filter = "",
    target: Filter = "",
    action: Filter = "",
    limit: Limit = 50,
    offset: Offset = 0,
):
    need(request, "read", roles.VIEW_ACTIVITY)
    found = selectors.events(interface=interface or "", actor=actor, target=target, action=action)
    items = list(found[offset : offset + limit])
    return {"count": found.count(), "limit": limit, "offset": offset, "items": items}
