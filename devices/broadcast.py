"""Pushes home changes to the channel layer, where the dashboard and MCP sessions listen.

Sync callers broadcast once their transaction commits. Async callers (MCP tools, consumers)
use `deferred()`: the write runs in Django's sync thread with its broadcasts held back, and
they are sent from the event loop afterwards, so the database thread never waits on the
channel layer.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Awaitable, Callable
from typing import Any, ParamSpec, TypeVar

from asgiref.sync import async_to_sync, sync_to_async
from channels.layers import get_channel_layer
from django.db import transaction

logger = logging.getLogger(__name__)

HOME_GROUP = "home"
P = ParamSpec("P")
R = TypeVar("R")

_held = threading.local()


def _message(event: dict[str, Any]) -> dict[str, Any]:
    return {"type": "home.event", "event": event}


def send_home_event(event: dict[str, Any]) -> None:
    """Send `event` to the home group now (message type `home.event`)."""
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async_to_sync(layer.group_send)(HOME_GROUP, _message(event))
    except Exception:  # a dead Redis must not undo a committed change
        logger.exception("could not broadcast home event %s", event.get("action"))


async def asend_home_event(event: dict[str, Any]) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        await layer.group_send(HOME_GROUP, _message(event))
    except Exception:
        logger.exception("could not broadcast home event %s", event.get("action"))


def broadcast_on_commit(event: dict[str, Any]) -> None:
    """Broadcast `event` once the surrounding transaction commits (never for a rollback)."""
    held = getattr(_held, "events", None)
    if held is not None:
        transaction.on_commit(lambda: held.append(event))
    else:
        transaction.on_commit(lambda: send_home_event(event))


def _run_holding(func: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> tuple[R, list[dict[str, Any]]]:
    _held.events = events = []
    try:
        return func(*args, **kwargs), events
    finally:
        _held.events = None


def deferred(func: Callable[P, R]) -> Callable[P, Awaitable[R]]:
    """The async twin of a sync service: same write, broadcasts sent from the event loop."""
    run = sync_to_async(_run_holding)

    @functools.wraps(func)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        result, events = await run(func, *args, **kwargs)
        for event in events:
            await asend_home_event(event)
        return result

    return wrapper
