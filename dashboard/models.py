"""An account's own settings on the dashboard: for now the language its pages are written in."""

from django.conf import settings
from django.db import models


class AccountLanguage(models.Model):
    """The language an account chose with the page footer's switcher; it wins over the browser's
    Accept-Language on every request that account signs in with (`dashboard.language`)."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="language_choice"
    )
    language = models.CharField(max_length=8, choices=settings.LANGUAGES)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.user} reads {self.language}"
