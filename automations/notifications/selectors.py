from __future__ import annotations

from django.db.models import QuerySet

from automations.notifications.models import Notification
from common import roles


def for_role(role: str | None) -> QuerySet[Notification]:
    """The notifications an account of `role` may see: none for a guest, approval notices for
    an owner only."""
    may = roles.capabilities(role)
    if roles.READ_NOTIFICATIONS not in may:
        return Notification.objects.none()
    rows = Notification.objects.all()
    if roles.DECIDE_REQUESTS not in may:
        rows = rows.filter(owners_only=False)
    return rows


def unread_count(role: str | None) -> int:
    return for_role(role).filter(dismissed_at=None).count()
