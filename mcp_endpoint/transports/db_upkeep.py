"""Upkeep of Django's database connections for the long-lived MCP transports.

Django closes broken and over-age connections at the start and end of each request;
Channels' consumers do it before *every* message, which with persistent connections is a
hop to the database thread per frame and per broadcast received. The MCP transports do it
at most once every `INTERVAL_SECONDS` per process instead: a connection broken by a
database restart is replaced within that time, at no cost per call.
"""

from __future__ import annotations

import time

from channels.db import aclose_old_connections

INTERVAL_SECONDS = 1.0
_last = float("-inf")


async def tidy_connections() -> None:
    """`close_old_connections()` in the database thread, when the last was long enough ago."""
    global _last
    now = time.monotonic()
    if now - _last >= INTERVAL_SECONDS:
        _last = now
        await aclose_old_connections()
