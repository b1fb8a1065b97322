"""Per-token budget of tool calls, in Django's cache (Redis when REDIS_URL is set, so every
hub process shares the count). A fixed window: MCP_RATE_LIMIT calls per
MCP_RATE_WINDOW_SECONDS."""

from __future__ import annotations

import time

from django.conf import settings
from django.core.cache import cache


def retry_after(key: str) -> float | None:
    """Count one call for `key`; None when allowed, else the seconds until the next window."""
    limit, window = settings.MCP_RATE_LIMIT, settings.MCP_RATE_WINDOW_SECONDS
    if limit <= 0:
        return None
    now = time.time()
    bucket = f"mcp-rate:{key}:{int(now // window)}"
    if cache.add(bucket, 1, timeout=window * 2):
        count = 1
    else:
        try:
            count = cache.incr(bucket)
        except ValueError:  # expired between add and incr
            cache.add(bucket, 1, timeout=window * 2)
            count = 1
    if count <= limit:
        return None
    return max(1.0, window - (now % window))
