"""Budgets in Django's cache (Redis when REDIS_URL is set, so every hub process shares the
count), each a fixed window: a token's tool calls (MCP_RATE_LIMIT per MCP_RATE_WINDOW_SECONDS)
and an address's OAuth client registrations (MCP_OAUTH_REGISTRATIONS_PER_HOUR)."""

from __future__ import annotations

import time

from django.core.cache import cache


def retry_after(key: str, limit: int, window: int) -> float | None:
    """Count one event for `key`, allowed `limit` times per `window` seconds (a limit of 0:
    always); None when allowed, else the seconds until the next window."""
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
