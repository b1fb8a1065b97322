"""Budgets, each a fixed window: a token's tool calls (MCP_RATE_LIMIT per MCP_RATE_WINDOW_SECONDS)
and an address's OAuth client registrations (MCP_OAUTH_REGISTRATIONS_PER_HOUR), counted for
every hub process together: in Redis when REDIS_URL is set (Django's cache, one increment per
event), else in the database (`RateCount`), on SQLite and PostgreSQL alike.

In the database a process does not write every event: it takes a lease of part of the budget
(1/LEASE_SHARE of it, one atomic increment of the window's row) and spends it in its own
memory (Django's local cache), so that most events cost what they cost before, an in-memory
decrement. All processes together never take more than the limit; a process holding a lease it
has not spent can make another be refused early, by at most that lease, within a window. A
window found spent is remembered as spent until it ends, so a caller past its budget costs no
write either."""

from __future__ import annotations

import time
from datetime import UTC, datetime

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.cache import cache
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from mcp_endpoint.models import RateCount

LEASE_SHARE = 20
# What a process's lease of a spent window is set to: far below zero, so that decrements
# keep it there without asking the database again.
SPENT = -(2**40)


def retry_after(key: str, limit: int, window: int) -> float | None:
    """Count one event for `key`, allowed `limit` times per `window` seconds (a limit of 0:
    always); None when allowed, else the seconds until the next window."""
    if limit <= 0:
        return None
    now = time.time()
    if settings.REDIS_URL:
        return None if _count_in_cache(key, limit, window, now) else _wait(window, now)
    allowed = _spend_lease(key, window, now)
    if allowed is None:
        allowed = _lease(key, window, now, _take(key, limit, window, now))
    return None if allowed else _wait(window, now)


async def aretry_after(key: str, limit: int, window: int) -> float | None:
    """`retry_after` from the event loop: the database is asked (in Django's database thread)
    only when the process's lease is spent."""
    if limit <= 0 or settings.REDIS_URL:
        return retry_after(key, limit, window)
    now = time.time()
    allowed = _spend_lease(key, window, now)
    if allowed is None:
        allowed = _lease(key, window, now, await sync_to_async(_take)(key, limit, window, now))
    return None if allowed else _wait(window, now)


def _wait(window: int, now: float) -> float:
    return max(1.0, window - (now % window))


def _count_in_cache(key: str, limit: int, window: int, now: float) -> bool:
    bucket = f"mcp-rate:{key}:{int(now // window)}"
    if cache.add(bucket, 1, timeout=window * 2):
        count = 1
    else:
        try:
            count = cache.incr(bucket)
        except ValueError:  # expired between add and incr
            cache.add(bucket, 1, timeout=window * 2)
            count = 1
    return count <= limit


def _lease_key(key: str, window: int, now: float) -> str:
    return f"mcp-rate-lease:{key}:{window}:{int(now // window)}"


def _spend_lease(key: str, window: int, now: float) -> bool | None:
    """One event from the process's lease: True if it had one left, False if the window is
    spent, None when the database must be asked for a new lease."""
    try:
        left = cache.decr(_lease_key(key, window, now))
    except ValueError:  # no lease in this window yet
        return None
    if left >= 0:
        return True
    return False if left <= SPENT else None


def _lease(key: str, window: int, now: float, granted: int) -> bool:
    """Keep what the database granted (one of it spent now); whether the event is allowed."""
    cache.set(_lease_key(key, window, now), granted - 1 if granted else SPENT, timeout=window * 2)
    return granted > 0


def _take(key: str, limit: int, window: int, now: float) -> int:
    """Take a lease of the window's budget from the database: how many events it grants (0:
    the window is spent). The increment comes first, so that the row is locked for the read of
    the total (SQLite's write lock, PostgreSQL's row lock): concurrent takers never both get
    what is left."""
    lease = max(1, limit // LEASE_SHARE)
    number = int(now // window)
    row = RateCount.objects.filter(key=f"{key}:{window}"[:255], window=number)
    with transaction.atomic():
        if not row.update(count=F("count") + lease):
            try:
                with transaction.atomic():
                    RateCount.objects.create(
                        key=f"{key}:{window}"[:255],
                        window=number,
                        count=lease,
                        ends_at=datetime.fromtimestamp((number + 1) * window, UTC),
                    )
            except IntegrityError:  # another process made it first
                row.update(count=F("count") + lease)
            else:  # a new window: forget the ended ones
                RateCount.objects.filter(ends_at__lt=timezone.now()).delete()
        total = row.values_list("count", flat=True).get()
    return max(0, min(lease, limit - (total - lease)))
