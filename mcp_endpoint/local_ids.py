"""Names that no other process of the hub makes, cheap enough to make on every request.

`secrets.token_hex` asks the kernel for randomness (a system call) each time; these names
need to be unique, not secret (an SSE stream or a private relay name is only reachable
through a session its token owns), so a random per-process prefix and a counter do.
"""

from __future__ import annotations

import itertools
import os
import secrets

_prefix = secrets.token_hex(6)
_counter = itertools.count(1)


def new_id() -> str:
    """Letters and digits only (SSE event ids are `<id>-<seq>`)."""
    return f"{_prefix}{next(_counter):x}"


def _renew_after_fork() -> None:
    global _prefix, _counter
    _prefix, _counter = secrets.token_hex(6), itertools.count(1)


os.register_at_fork(after_in_child=_renew_after_fork)
