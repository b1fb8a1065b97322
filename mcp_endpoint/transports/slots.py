"""Per-key counts of what is open or running in this process, held against a limit.

The WebSocket transport counts each token's open connections (MCP_MAX_SESSIONS_PER_TOKEN),
the HTTP transport each session's POSTs running at once (MCP_MAX_CONCURRENT_CALLS); see
docs/LIMITS.md. Counts are per process: every hub process allows up to the limit.
"""

from __future__ import annotations

from collections.abc import Hashable


class Slots:
    """A count per key; a key is forgotten when its count falls back to zero."""

    def __init__(self) -> None:
        self._taken: dict[Hashable, int] = {}

    def take(self, key: Hashable, limit: int) -> bool:
        """Count one more for `key`, unless `limit` (0: no limit) are taken already."""
        taken = self._taken.get(key, 0)
        if 0 < limit <= taken:
            return False
        self._taken[key] = taken + 1
        return True

    def give_back(self, key: Hashable) -> None:
        """Undo one `take` that succeeded."""
        self._taken[key] -= 1
        if not self._taken[key]:
            del self._taken[key]
