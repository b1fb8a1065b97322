"""A fix for the HTTP server daphne runs on, applied when HomeHub is served by daphne.

Twisted parses the `Content-Type` of every POST (`twisted.web.http._parseContentType`) by
building an `email.message.EmailMessage`, which creates a header class per call: about
60 µs per request here, 12 % of the CPU of a `/mcp` call, more than HomeHub's own
`tools/call` handling of a read. The parse is a pure function of the header's bytes and
clients send the same few values, so it is memoized (a bounded cache: a client inventing
values only evicts entries). Nothing is patched when Twisted is not already loaded (under
uvicorn, the stdio server, tests) or when this Twisted no longer has the function.
"""

from __future__ import annotations

import functools
import sys

CACHED_CONTENT_TYPES = 64


def apply() -> bool:
    """Memoize Twisted's Content-Type parse; True when it is (now or already) memoized."""
    http = sys.modules.get("twisted.web.http")
    parse = getattr(http, "_parseContentType", None)
    if parse is None:
        return False
    if not hasattr(parse, "cache_info"):
        http._parseContentType = functools.lru_cache(maxsize=CACHED_CONTENT_TYPES)(parse)
    return True
