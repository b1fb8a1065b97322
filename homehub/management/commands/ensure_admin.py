"""Create the first dashboard/admin account when none exists, and say how to log in."""

import os
import secrets

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

from common import roles
from homehub.admin_login import dashboard_url, keep_password, kept_password_file


class Command(BaseCommand):
    help = (
        "Create a superuser 'admin' if the hub has none and print its password: "
        "$HOMEHUB_ADMIN_PASSWORD or a random one, then kept (mode 600) in .homehub-admin-password "
        "in the first writable state folder (HOMEHUB_STATE_DIR; by default the project folder, "
        "then /var/lib/homehub)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--host", help="the address the hub serves on, as given to `serve` (127.0.0.1)")
        parser.add_argument("--port", type=int, help="the port the hub serves on, as given to `serve` (8000)")
        parser.add_argument(
            "--url",
            help="where users open the hub (e.g. https://hub.example.org/); by default from --host "
            "and --port, else DJANGO_CSRF_TRUSTED_ORIGINS, else http://127.0.0.1:8000/",
        )

    def handle(self, *args, host=None, port=None, url=None, **options):
        login_url = url or dashboard_url(host, port)
        User = get_user_model()
        if User.objects.filter(is_superuser=True).exists():
            kept = kept_password_file()
            hint = f" (password in {kept})" if kept else ""
            self.stdout.write(f"Log in at {login_url} with your existing account{hint}.")
            return
        chosen = os.environ.get("HOMEHUB_ADMIN_PASSWORD")
        password = chosen or secrets.token_urlsafe(12)
        # The account exists only once its password has reached the terminal: nothing that can
        # fail comes between, and a failed write undoes it, so running again starts afresh.
        with transaction.atomic():
            admin = User.objects.create_superuser("admin", "", password)
            roles.assign(admin, roles.OWNER)  # a superuser is an owner anyway; the group says so too
            self.stdout.write(
                self.style.SUCCESS(
                    f"Created the account 'admin'. Log in at {login_url} as admin with password: {password}"
                )
            )
            self.stdout.flush()
        if chosen:
            return
        try:
            kept = keep_password(password)
        except OSError as exc:
            self.stderr.write(
                f"No copy of the password was kept ({exc}): note it now, or set HOMEHUB_STATE_DIR "
                "to a writable folder before the next first install."
            )
        else:
            self.stdout.write(f"(it is also kept in {kept}, readable by this user only)")
