"""Pushes home changes to the channel layer, where the dashboard and MCP sessions listen."""

from __future__ import annotations

import logging
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

logger = logging.getLogger(__name__)

HOME_GROUP = "home"


def send_home_event(event: dict[str, Any]) -> None:
    """Send `event` to the home group now (message type `home.event`)."""
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async_to_sync(layer.group_send)(HOME_GROUP, {"type": "home.event", "event": event})
    except Exception:  # a dead Redis must not undo a committed change
        logger.exception("could not broadcast home event %s", event.get("action"))


def broadcast_on_commit(event: dict[str, Any]) -> None:
    """Broadcast `event` once the surrounding transaction commits (never for a rollback)."""
    transaction.on_commit(lambda: send_home_event(event))
