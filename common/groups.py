"""Long-lived listeners on the channel layer (outside consumers): the layer itself, a wait
until every process is heard, a receive loop that survives a failing layer, and a process's
channel made the first time something needs it (`ProcessChannel`).

Neither of the hub's layers forgets a group membership on its own (the database layer, and
channels-redis's pub/sub layer, where a membership is the process's subscription, made again
by redis-py when it reconnects): a listener joins once and leaves when it ends.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from channels.layers import BaseChannelLayer, get_channel_layer

from common.tasks import StartOnce, Tasks

logger = logging.getLogger(__name__)


def channel_layer() -> BaseChannelLayer:
    """The hub's channel layer, which settings always configure (the database layer, or
    Redis's): for the listeners that cannot work without one."""
    layer = get_channel_layer()
    if layer is None:
        raise RuntimeError("CHANNEL_LAYERS has no default layer")
    return layer


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


class ProcessChannel:
    """This process's channel on the layer, in `groups`, made the first time something needs it
    (`open`, `join`), each message on it handed to `handle`. Bound to one event loop: made again
    from another, and after a failed start (the layer was away), as `StartOnce` does."""

    def __init__(
        self, handle: Callable[[dict[str, Any]], Awaitable[None]], what: str, groups: tuple[str, ...] = ()
    ) -> None:
        self.handle, self.what, self.groups = handle, what, groups
        self.channel = ""
        self._started = StartOnce(self._start)
        self._tasks = Tasks(what)

    async def open(self) -> str:
        """The channel, made and joined to its groups if need be; raises when the layer fails."""
        await self._started()
        return self.channel

    async def join(self) -> None:
        """Make sure messages on the groups reach this process from now on. When the channel
        layer is down it is logged, and tried again at the next call: work here goes on,
        only what other processes announce cannot reach it."""
        try:
            await self.open()
        except Exception:
            logger.exception("%s could not join the channel layer; retrying when next needed", self.what)

    async def _start(self) -> None:
        layer = channel_layer()
        channel = await layer.new_channel()
        for group in self.groups:
            await layer.group_add(group, channel)
        self._tasks.cancel()  # those of an earlier start went with its loop
        self._tasks = Tasks(self.what)
        self._tasks.spawn(receive_forever(layer, channel, self.handle, self.what))
        self.channel = channel
