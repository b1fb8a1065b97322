"""Idle timeouts for long-lived connections (/ws/mcp/, /ws/devices/).

A socket whose peer vanished without closing (power cut, lost Wi-Fi, a NAT that forgot it)
stays open on the hub's side until TCP gives up, which can take hours, holding its session
and memory. `IdleWatch` closes a connection after `seconds` without a frame from the peer;
`on_quiet`, when given, is called once half-way through a silence (to ping the peer, whose
answer counts as a frame), so only a dead or stuck peer reaches the limit.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

CLOSE_IDLE = 4408  # application range (daphne sends only 1000 and 3000-4999): 408, timed out


class IdleWatch:
    def __init__(
        self,
        seconds: float,
        on_idle: Callable[[], Awaitable[None]],
        on_quiet: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.seconds = seconds
        self._on_idle = on_idle
        self._on_quiet = on_quiet
        self._last = 0.0
        self._nudged = False
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start watching (nothing happens when `seconds` is 0)."""
        if self.seconds > 0:
            self.heard()
            self._task = asyncio.ensure_future(self._watch())

    def heard(self) -> None:
        """The peer sent a frame: the silence starts again."""
        self._last = asyncio.get_running_loop().time()
        self._nudged = False

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()

    async def _watch(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            silent = loop.time() - self._last
            if silent >= self.seconds:
                await self._on_idle()
                return
            half = self.seconds / 2
            if self._on_quiet is not None and not self._nudged and silent >= half:
                self._nudged = True
                await self._on_quiet()
                continue
            wake = half if self._on_quiet is not None and not self._nudged else self.seconds
            await asyncio.sleep(max(wake - silent, 0.01))
