"""System checks of the hub's own settings (`manage.py check`, and every command that runs
the checks, `serve` included)."""

from __future__ import annotations

import os
from typing import Any

from django.conf import settings
from django.core import checks

from common.origins import parse_origin


@checks.register(checks.Tags.security)
def secret_key_kept(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """Without DJANGO_SECRET_KEY the key lives in the state folder; if none took it, this
    process made up its own."""
    if os.environ.get("DJANGO_SECRET_KEY") or settings.SECRET_KEY_FILE is not None:
        return []
    return [
        checks.Warning(
            "DJANGO_SECRET_KEY is unset and no state folder could keep a generated key: this "
            "process uses a key of its own, so logins end when it stops and other processes of "
            "the hub do not accept them.",
            hint="Set HOMEHUB_STATE_DIR to a writable folder, or set DJANGO_SECRET_KEY.",
            id="homehub.W001",
        )
    ]


@checks.register(checks.Tags.security)
def allowed_origins_are_origins(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """An MCP_ALLOWED_ORIGINS entry that is no `scheme://host[:port]` would never match."""
    return [
        checks.Warning(
            f"MCP_ALLOWED_ORIGINS entry {entry!r} is not an origin and allows nothing.",
            hint="Write each as scheme://host[:port], e.g. https://agent.example.",
            id="homehub.W002",
        )
        for entry in settings.MCP_ALLOWED_ORIGINS
        if parse_origin(entry) is None
    ]
