"""Events of Streamable HTTP streams kept for a GET resumed with `Last-Event-ID` (SEP-1699).

Kept in the cache (Redis when REDIS_URL is set, so every process sees them), per stream,
the last MCP_SSE_KEEP_EVENTS events for MCP_SSE_KEEP_SECONDS. A GET stream keeps every
event it sends (they are rare: notifications). A POST stream keeps its events from the
moment the server cuts it off mid-call (`ToolContext.close_stream`): what it wrote to a
live connection before was delivered, and a tool call pays no cache write.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.core.cache import cache


@dataclass
class StreamRecord:
    kind: str  # "get" or "post"
    events: list[tuple[int, dict[str, Any]]] = field(default_factory=list)  # (seq, message)
    done: bool = False  # the stream has sent its last event (a POST stream's response)

    def after(self, seq: int) -> list[tuple[int, dict[str, Any]]]:
        return [(n, message) for n, message in self.events if n > seq]


def event_id(stream_id: str, seq: int) -> str:
    return f"{stream_id}-{seq}"


def parse_event_id(value: str | None) -> tuple[str, int] | None:
    """`<stream>-<seq>` as this hub writes them; None for anything else."""
    stream_id, _, seq = (value or "").strip().rpartition("-")
    if not stream_id or not seq.isdigit() or not stream_id.isalnum():
        return None
    return stream_id, int(seq)


def _key(session_id: str, stream_id: str) -> str:
    digest = hashlib.sha256(session_id.encode()).hexdigest()[:32]
    return f"mcp-sse:{digest}:{stream_id}"


async def save(session_id: str, stream_id: str, record: StreamRecord) -> None:
    record.events = record.events[-settings.MCP_SSE_KEEP_EVENTS :]
    value = {"kind": record.kind, "events": record.events, "done": record.done}
    await cache.aset(_key(session_id, stream_id), value, settings.MCP_SSE_KEEP_SECONDS)


async def load(session_id: str, stream_id: str) -> StreamRecord | None:
    value = await cache.aget(_key(session_id, stream_id))
    if not isinstance(value, dict):
        return None
    events = [(int(n), message) for n, message in value.get("events", [])]
    return StreamRecord(value.get("kind", "get"), events, bool(value.get("done")))
