"""How a person first reaches the hub: the address to open, and the kept copy of the first
admin's password (`ensure_admin` prints it, and keeps a copy when a state folder takes it).

The copy goes to the first of `settings.HOMEHUB_STATE_DIRS` that is writable: the folder
HOMEHUB_STATE_DIR names, or else the project folder (development) and then /var/lib/homehub
(a deployment, where the code folder is read-only). Never required: a folder that refuses it
costs the copy, never the password.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path

from django.conf import settings

from homehub.state import write_private

PASSWORD_FILE = ".homehub-admin-password"
DEFAULT_HOST, DEFAULT_PORT = "127.0.0.1", 8000  # `manage.py serve`'s


def local_url(host: str = DEFAULT_HOST, port: int = DEFAULT_PORT) -> str:
    """The address this machine reaches a hub listening on `host`:`port` at (no trailing slash)."""
    if host in {"0.0.0.0", "::", ""}:  # every interface: loopback is one of them
        host = "127.0.0.1"
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port}"


def dashboard_url(host: str | None = None, port: int | None = None) -> str:
    """Where to log in: the hub on `host`:`port` when either is given; otherwise the public
    origin the settings trust (DJANGO_CSRF_TRUSTED_ORIGINS, a deployment behind its proxy);
    otherwise the address `serve` uses by default."""
    if host is None and port is None and settings.CSRF_TRUSTED_ORIGINS:
        return settings.CSRF_TRUSTED_ORIGINS[0].rstrip("/") + "/"
    return local_url(host or DEFAULT_HOST, port or DEFAULT_PORT) + "/"


def on_loopback(host: str) -> bool:
    """Whether a hub listening on `host` is reachable from this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a host name: whatever it resolves to
        return False


def exposure_notice(host: str, port: int) -> str:
    """What `serve` says first: where the hub listens and who can reach it over plain HTTP."""
    if host in {"0.0.0.0", "::", ""}:
        where = f"on every network interface of this machine, port {port} ({local_url(host, port)}/ here)"
    else:
        where = f"at http://{f'[{host}]' if ':' in host else host}:{port}/"
    if on_loopback(host):
        return (
            f"HomeHub serves plain HTTP {where}, on this machine only. It is not for the internet "
            "without TLS in front (docs/DEPLOY.md)."
        )
    return (
        f"WARNING: HomeHub serves plain HTTP {where}, reachable from other machines: anyone on "
        "the network can reach its login page and read what travels to it, passwords and "
        "sessions included. Never expose it to the internet like this: put it behind TLS "
        "(docs/DEPLOY.md), or serve on 127.0.0.1."
    )


def keep_password(password: str) -> Path:
    """Write `password` (mode 600 from the start) into the first state folder that takes it.
    Raises OSError naming each folder's refusal when none does."""
    refusals = []
    for folder in map(Path, settings.HOMEHUB_STATE_DIRS):
        try:
            return write_private(folder, PASSWORD_FILE, password + "\n")
        except OSError as exc:
            refusals.append(f"{folder}: {exc.strerror or exc}")
    raise OSError("; ".join(refusals) or "no state folder is configured")


def kept_password_file() -> Path | None:
    """The copy `keep_password` made, if any."""
    return next(
        (path for path in (Path(d) / PASSWORD_FILE for d in settings.HOMEHUB_STATE_DIRS) if path.is_file()),
        None,
    )
