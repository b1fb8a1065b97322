"""The home's changes on the channel layer's `home` group, where every hub process's dashboard
sockets, MCP sessions, MQTT state-out and home-state copy listen (message type `home.event`).

Services announce a change inside its transaction (`announce_change`): it goes out when the
transaction commits, never for a rollback, and the committing thread never waits for it.
"""

from __future__ import annotations

import logging
from typing import Any

from channels.layers import get_channel_layer

from common.feed import announce

logger = logging.getLogger(__name__)

CHANGES_GROUP = "home"
CHANGE_EVENT = "home.event"  # the channel-layer message type (consumers handle it as `home_event`)


def _message(event: dict[str, Any]) -> dict[str, Any]:
    return {"type": CHANGE_EVENT, "event": event}


def announce_change(event: dict[str, Any]) -> None:
    """Send `event` to every process's home group once the current transaction commits (at
    once outside one)."""
    announce(CHANGES_GROUP, _message(event))


async def asend_home_event(event: dict[str, Any]) -> None:
    """From the event loop: send `event` to the home group now (the MQTT worker's live sensor
    values, announced after their batches committed)."""
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        await layer.group_send(CHANGES_GROUP, _message(event))
    except Exception:  # a dead Redis must not stop the worker
        logger.exception("could not broadcast home event %s", event.get("kind"))
