"""Logs a tool sends its client (`notifications/message`): MCP's levels, which reach a client,
and the redaction of anything that looks like a secret on the way."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

# MCP's log levels (RFC 5424's severities), least severe first.
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
# What must never reach a client's log: the hub's tokens (`hh_<key id>_<secret>`) and bearer
# credentials, however a tool came to word them.
SECRET_RE = re.compile(r"\bhh_[0-9a-f]+_[A-Za-z0-9_-]+|\b[Bb]earer\s+[A-Za-z0-9._~+/=-]+")
REDACTED = "[redacted]"


def redact(data: Any) -> Any:
    """`data` (a log's JSON) with every secret-looking string part replaced by `[redacted]`."""
    if isinstance(data, str):
        return SECRET_RE.sub(REDACTED, data)
    if isinstance(data, dict):
        return {key: redact(value) for key, value in data.items()}
    if isinstance(data, list | tuple):
        return [redact(value) for value in data]
    return data


def log_wanted(level: str, least: str | None) -> bool:
    """Whether a log at `level` reaches a client that wants `least` and above (None: no logs)."""
    return least is not None and level in LOG_LEVELS and LOG_LEVELS.index(level) >= LOG_LEVELS.index(least)


@dataclass(frozen=True)
class LogRecord:
    """A `notifications/message` not tied to a request (`logger`: what logs)."""

    level: str
    data: Any
    logger: str
