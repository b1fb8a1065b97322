from __future__ import annotations

from django.conf import settings
from django.db import models

TITLE_LENGTH = 200
TEXT_LENGTH = 2000
LINK_LENGTH = 500


class Notification(models.Model):
    """One notification, household-wide: every account whose role may see it sees it until
    someone dismisses it (read state is the household's, as a note on the fridge is)."""

    class Level(models.TextChoices):
        INFO = "info"
        WARNING = "warning"
        ALERT = "alert"

    class Source(models.TextChoices):
        REQUEST = "request"  # a dangerous call waits for a person (owners only)
        AUTOMATION = "automation"
        ALARM = "alarm"
        HUB = "hub"

    title = models.CharField(max_length=TITLE_LENGTH, blank=True)
    text = models.TextField(max_length=TEXT_LENGTH)
    level = models.CharField(max_length=16, choices=Level.choices, default=Level.INFO)
    source = models.CharField(max_length=32, choices=Source.choices, default=Source.HUB)
    link = models.CharField(max_length=LINK_LENGTH, blank=True, help_text="a path on the hub")
    owners_only = models.BooleanField(default=False, help_text="seen and sent to owners only")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    dismissed_at = models.DateTimeField(null=True, blank=True, db_index=True)
    dismissed_by = models.CharField(max_length=150, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return self.title or self.text[:60]


class NotifyTarget(models.Model):
    """An account's own notification services (Apprise URLs): per account rather than per
    person of the home, because the account's household role is what decides which
    notifications it may receive (approval requests go to owners only)."""

    account = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notify_target"
    )
    urls = models.TextField(
        blank=True,
        help_text="Apprise URLs, one per line or separated by spaces: ntfy://topic, "
        "mailto://user:password@example.com, tgram://bottoken/chat_id ...",
    )

    def __str__(self) -> str:
        return f"notifications of {self.account}"
