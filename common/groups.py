"""Long-lived listeners on the channel layer (outside consumers): group memberships that
outlive Redis's group expiry, and a receive loop that survives a failing layer.

channels-redis forgets a membership `group_expiry` seconds after `group_add` (a day by
default), so that a crashed process's channels do not linger. A connection that lives
longer (a device, a dashboard left open, a worker) must join again before then.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from channels.layers import BaseChannelLayer, get_channel_layer
from django.conf import settings

logger = logging.getLogger(__name__)

MAX_REJOIN_SECONDS = 3600.0


def channel_layer() -> BaseChannelLayer:
    """The hub's channel layer, which settings always configure (the database layer, or
    Redis's): for the listeners that cannot work without one."""
    layer = get_channel_layer()
    if layer is None:
        raise RuntimeError("CHANNEL_LAYERS has no default layer")
    return layer


def rejoin_seconds() -> float:
    return max(0.5, min(MAX_REJOIN_SECONDS, settings.REDIS_GROUP_EXPIRY_SECONDS / 4))


async def _rejoin_forever(layer: Any, groups: Callable[[], Iterable[str]], channel: str) -> None:
    while True:
        await asyncio.sleep(rejoin_seconds())
        for group in list(groups()):
            try:
                await layer.group_add(group, channel)
            except Exception:
                logger.exception("could not renew %s's membership of %s", channel, group)


def keep_joined(layer: Any, groups: Callable[[], Iterable[str]], channel: str) -> asyncio.Task[None]:
    """Renew `channel`'s membership of `groups()` until the returned task is cancelled."""
    return asyncio.ensure_future(_rejoin_forever(layer, groups, channel))


async def hear_every_process(layer: Any) -> None:
    """Return once a message any hub process sends from now on reaches this one. With Redis
    that is as soon as the channel has joined its groups; the database layer's other
    processes learn of a new listener only within a registry read (`feed_epoch` is None
    until then), so a listener that must miss nothing (the automations engine, before it
    takes a lease) waits for it."""
    feed_epoch = getattr(layer, "feed_epoch", None)
    while feed_epoch is not None and feed_epoch() is None:
        await asyncio.sleep(0.1)


async def receive_forever(
    layer: Any, channel: str, handle: Callable[[dict[str, Any]], Awaitable[None]], what: str
) -> None:
    """Hand every message on `channel` to `handle`, for ever; when the layer fails (Redis
    away), log it and try again a second later."""
    while True:
        try:
            message = await layer.receive(channel)
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("%s: the channel layer failed; retrying", what)
            await asyncio.sleep(1)
            continue
        await handle(message)
