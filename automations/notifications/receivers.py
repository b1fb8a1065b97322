"""A dangerous call waiting for a person becomes a notification for the owners, in whichever
process the call waits (the engine's `request_made` signal: mcp_endpoint imports no app).

A notification is the household's, not one reader's: it is written once, in the hub's language
(LANGUAGE_CODE), whoever's request made it, and sent as written to every service."""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.dispatch import receiver
from django.urls import NoReverseMatch, reverse
from django.utils import translation
from django.utils.translation import gettext

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
    with translation.override(settings.LANGUAGE_CODE):
        text = gettext("%(summary)s with %(arguments)s.") % {"summary": request.summary, "arguments": shown}
        title = gettext("Approval needed")
    notify(
        text,
        title=title,
        source=Source.REQUEST,
        level=Level.WARNING,
        link=link,
        owners_only=True,
    )
