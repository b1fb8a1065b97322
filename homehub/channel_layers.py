"""The in-memory channel layer (no `REDIS_URL`), with a group send that costs what it does.

Channels' `InMemoryChannelLayer.group_send` starts a task per member and gathers them with
`asyncio.as_completed`, which builds a queue even for an empty group: every home change
paid ~4 µs to tell nobody and ~10 µs per listening dashboard or MCP session. Its `send`
never waits (`put_nowait` on the channel's queue), so the members are sent to in turn,
with the same checks, expiry clean-up and the same `ChannelFull` rule (a full channel
misses the message; the others still get it).
"""

from __future__ import annotations

import contextlib
from typing import Any

from channels import layers
from channels.exceptions import ChannelFull


class InMemoryChannelLayer(layers.InMemoryChannelLayer):
    """Channels' layer but for `group_send`; the same class name, which `/healthz` reports."""

    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        assert isinstance(message, dict), "Message is not a dict"
        self.require_valid_group_name(group)
        self._clean_expired()
        for channel in list(self.groups.get(group, ())):
            with contextlib.suppress(ChannelFull):  # that channel misses it, as in Channels
                await self.send(channel, message)
