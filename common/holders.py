"""Who holds a lease: the outbound endpoints' supervisor and the automations engine each name
their holder by this host, this process and a random part, so that two holders in one
process (or a process that reused a dead one's pid) never pass for each other."""

from __future__ import annotations

import os
import secrets
import socket


def process_name() -> str:
    """A new holder's name: host, pid and a random part."""
    return f"{socket.gethostname()[:60]}:{os.getpid()}:{secrets.token_hex(4)}"
