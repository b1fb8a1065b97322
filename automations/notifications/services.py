"""Writing notifications: `notify` is the one way in (pending approvals now, the automations
engine's `notify` actions and alarm trips next), dismissing them from the dashboard."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from automations.notifications import dispatch
from automations.notifications.models import (
    LINK_LENGTH,
    TEXT_LENGTH,
    TITLE_LENGTH,
    Notification,
    NotifyTarget,
)
from automations.notifications.selectors import for_role
from common import roles
from common.feed import announce

NOTIFICATIONS_GROUP = "notifications"
NOTIFICATIONS_CHANGED = "notifications.changed"  # the channel-layer message type
# Bounds of the table: older notifications, and those beyond the newest KEEP_COUNT, go as new
# ones are made (the audit trail keeps what the hub did; this is the household's inbox).
KEEP_FOR = timedelta(days=30)
KEEP_COUNT = 1000

Level = Notification.Level
Source = Notification.Source


def notify(
    text: str,
    *,
    title: str = "",
    source: str = Source.HUB,
    level: str = Level.INFO,
    link: str = "",
    owners_only: bool = False,
) -> Notification:
    """Notify the household: a row the dashboard shows at once (banner and list), then sent,
    after the commit and off this thread, to `NOTIFY_URLS` and to the own services of each
    active account whose role may see it. `link` is a path on the hub (sent as a full address
    when HUB_URL is set). The automations engine's entry point for `notify` actions and alarm
    trips; a failing service never loses the row."""
    with transaction.atomic():
        row = Notification.objects.create(
            text=text[:TEXT_LENGTH],
            title=title[:TITLE_LENGTH],
            source=source,
            level=level,
            link=link[:LINK_LENGTH],
            owners_only=owners_only,
        )
        _prune()
        announce(NOTIFICATIONS_GROUP, {"type": NOTIFICATIONS_CHANGED, "owners_only": owners_only})
        dispatch.send_later(
            destinations(owners_only=owners_only), title=row.title, body=_body(row), level=row.level
        )
    return row


def destinations(*, owners_only: bool) -> list[dispatch.Destination]:
    """The household's services, then each account's that may see such a notification."""
    found = [dispatch.Destination(url, f"NOTIFY_URLS #{i}") for i, url in enumerate(settings.NOTIFY_URLS, 1)]
    needed = roles.DECIDE_REQUESTS if owners_only else roles.READ_NOTIFICATIONS
    targets = NotifyTarget.objects.filter(account__is_active=True).exclude(urls="").select_related("account")
    for target in targets:
        if roles.can(target.account, needed):
            name = target.account.get_username()
            found += [
                dispatch.Destination(url, f"{name}'s #{i}") for i, url in enumerate(target.urls.split(), 1)
            ]
    return found


def _body(row: Notification) -> str:
    if row.link and settings.HUB_URL:
        return f"{row.text}\n{settings.HUB_URL.rstrip('/')}{row.link}"
    return row.text


def _prune() -> None:
    old = Notification.objects.filter(created_at__lt=timezone.now() - KEEP_FOR)
    beyond = Notification.objects.order_by("-created_at", "-pk").values_list("pk", flat=True)[
        KEEP_COUNT : KEEP_COUNT + 1
    ]
    old.delete()
    if beyond:
        Notification.objects.filter(pk__lte=beyond[0]).delete()


def dismiss(pk: int, *, role: str | None, by: str) -> bool:
    """Dismiss one notification the role may see; False when it may not or it is gone."""
    done = (
        for_role(role)
        .filter(pk=pk, dismissed_at=None)
        .update(dismissed_at=timezone.now(), dismissed_by=by[:150])
    )
    if done:
        announce(NOTIFICATIONS_GROUP, {"type": NOTIFICATIONS_CHANGED, "owners_only": False})
    return bool(done)


def dismiss_all(*, role: str | None, by: str) -> int:
    done = for_role(role).filter(dismissed_at=None).update(dismissed_at=timezone.now(), dismissed_by=by[:150])
    if done:
        announce(NOTIFICATIONS_GROUP, {"type": NOTIFICATIONS_CHANGED, "owners_only": False})
    return done
