"""Sending a notification to its services through Apprise, off every request and event loop.

Apprise speaks ntfy, e-mail, Telegram, Matrix, Discord and about a hundred other services, each
named by a URL, so the household adds a service by adding a URL. Each URL is sent on its own on
a small pool of threads of this module, handed over once the notification's row is committed
(`send_later`): a slow or failing service never holds a request, a tool call or an event loop,
never touches the dashboard's copy, and never keeps another URL from being sent. At most
MAX_WAITING sends wait at once; more are dropped (and counted), never queued without bound.

The URLs carry secrets (passwords, bot tokens, ntfy topics): a failure is logged naming only
where the URL came from and its scheme, and Apprise's own logger is silenced in settings.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from django.db import transaction
from prometheus_client import Counter

logger = logging.getLogger(__name__)

WORKERS = 2
MAX_WAITING = 200  # sends waiting or running at once, all URLs together

DELIVERIES = Counter(
    "homehub_notification_deliveries",
    "Notifications sent to a service (Apprise URL), by outcome (sent, failed, bad_url, dropped).",
    ["outcome"],
)

# A notification's level as Apprise's NotifyType names it.
KINDS = {"info": "INFO", "warning": "WARNING", "alert": "FAILURE"}

_pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="notify")
_slots = threading.BoundedSemaphore(MAX_WAITING)


@dataclass(frozen=True)
class Destination:
    url: str
    origin: str  # where the URL is set, as logs may name it: "NOTIFY_URLS #2", "ana's #1"

    @property
    def scheme(self) -> str:
        return self.url.split("://", 1)[0][:20] if "://" in self.url else "?"


def send_later(destinations: list[Destination], *, title: str, body: str, level: str) -> None:
    """Send to each destination once the current transaction commits (at once outside one)."""
    if destinations:
        transaction.on_commit(lambda: _hand_over(destinations, title, body, level))


def _hand_over(destinations: list[Destination], title: str, body: str, level: str) -> None:
    for destination in destinations:
        if not _slots.acquire(blocking=False):
            DELIVERIES.labels("dropped").inc()
            logger.warning("notification not sent to %s: too many sends waiting", destination.origin)
            continue
        _pool.submit(_send, destination, title, body, level)


def _send(destination: Destination, title: str, body: str, level: str) -> None:
    # Apprise (its plugins) loads with the first send, not with every command of the hub (about
    # 20 ms of CPU at start, mcp_stdio's included).
    import apprise

    try:
        service = apprise.Apprise()
        if not service.add(destination.url):
            DELIVERIES.labels("bad_url").inc()
            logger.warning(
                "notification not sent to %s: not an Apprise URL (scheme %r)",
                destination.origin,
                destination.scheme,
            )
            return
        kind = apprise.NotifyType[KINDS.get(level, "INFO")]
        sent = service.notify(body=body, title=title, notify_type=kind)
        DELIVERIES.labels("sent" if sent else "failed").inc()
        if not sent:
            logger.warning("notification not delivered to %s (%s://)", destination.origin, destination.scheme)
    except Exception as error:  # a plugin's own bug: logged by type only, its text may hold the URL
        DELIVERIES.labels("failed").inc()
        logger.warning(
            "notification not delivered to %s (%s://): %s",
            destination.origin,
            destination.scheme,
            type(error).__name__,
        )
    finally:
        _slots.release()
