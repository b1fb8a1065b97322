"""Create the first dashboard/admin account when none exists, and say how to log in."""

import os
import secrets
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = (
        "Create a superuser 'admin' if the hub has none. The password is "
        "$HOMEHUB_ADMIN_PASSWORD or a random one, kept in .homehub-admin-password (mode 600)."
    )

    def handle(self, *args, **options):
        User = get_user_model()
        password_file = Path(settings.BASE_DIR) / ".homehub-admin-password"
        if User.objects.filter(is_superuser=True).exists():
            hint = f" (password in {password_file.name})" if password_file.exists() else ""
            self.stdout.write(f"Log in at http://127.0.0.1:8000/ with your existing account{hint}.")
            return
        password = os.environ.get("HOMEHUB_ADMIN_PASSWORD") or secrets.token_urlsafe(12)
        User.objects.create_superuser("admin", "", password)
        if "HOMEHUB_ADMIN_PASSWORD" not in os.environ:
            password_file.write_text(password + "\n")
            password_file.chmod(0o600)
        self.stdout.write(
            self.style.SUCCESS(
                "Created the account 'admin'. Log in at http://127.0.0.1:8000/ as admin "
                f"with password: {password}"
                + (f"\n(it is also kept in {password_file.name})" if password_file.exists() else "")
            )
        )
