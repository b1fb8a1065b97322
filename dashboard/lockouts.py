"""Login throttling's audit: when django-axes locks a username out at an address (too many
failed logins on the dashboard's or the admin's form), the lockout goes into the audit trail,
once, as `login.lockout` (the attempts refused while it lasts are not recorded: a guesser would
fill the trail)."""

from __future__ import annotations

from typing import Any

from axes.signals import user_locked_out
from django.conf import settings
from django.dispatch import receiver
from django.http import HttpRequest

from audit.models import Event
from audit.services import record_event


@receiver(user_locked_out)
def record_lockout(
    sender: Any, request: HttpRequest, username: str | None, ip_address: str | None, **kwargs: Any
) -> None:
    failures = getattr(request, "axes_failures_since_start", None)
    if failures is None:  # an attempt refused while the lockout lasts, not its start
        return
    on_admin = request.path.startswith("/admin/")
    record_event(
        actor=username or "",
        interface=Event.Interface.ADMIN if on_admin else Event.Interface.DASHBOARD,
        action="login.lockout",
        target=f"login:{username or ''}"[:200],
        after={
            "address": ip_address,
            "failures": failures,
            "cooloff_seconds": int(settings.AXES_COOLOFF_TIME.total_seconds()),
        },
    )
