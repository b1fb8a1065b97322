"""A dangerous call waiting for a person becomes a notification for the owners, in whichever
process the call waits (the engine's `request_made` signal: mcp_endpoint imports no app)."""

from __future__ import annotations

import json
from typing import Any

from django.dispatch import receiver
from django.urls import NoReverseMatch, reverse

from automations.notifications.services import Level, Source, notify
from mcp_endpoint.controls import confirmation
from mcp_endpoint.models import PendingConfirmation


@receiver(confirmation.request_made)
def notify_owners(sender: Any, request: PendingConfirmation, **kwargs: Any) -> None:
    try:
        link = reverse(confirmation.APPROVAL_PAGE, args=[request.pk])
    except NoReverseMatch:
        link = ""
    shown = json.dumps(request.arguments, ensure_ascii=False)
    notify(
        f"{request.summary} with {shown}.",
        title="Approval needed",
        source=Source.REQUEST,
        level=Level.WARNING,
        link=link,
        owners_only=True,
    )
