"""Events of Streamable HTTP streams kept for a GET resumed with `Last-Event-ID` (SEP-1699).

Kept in the cache (Redis when REDIS_URL is set, so every process sees them), per stream,
the last MCP_SSE_KEEP_EVENTS events for MCP_SSE_KEEP_SECONDS. A GET stream keeps every
event it sends (they are rare: notifications). A POST stream keeps its events from the
moment the server cuts it off mid-call (`ToolContext.close_stream`): what it wrote to a
live connection before was delivered, and a tool call pays no cache write.

Keeping an event costs the same however many are kept: each event is a key of its own, in
a ring of MCP_SSE_KEEP_EVENTS slots per stream (the n-th event kept goes to slot
n % MCP_SSE_KEEP_EVENTS, over the one that fell out of the window), next to a small head
(kind, done, how many were kept), both written in one `set_many` (one round trip to Redis,
a transaction there). A load reads the head, then the slots of its window in one
`get_many`, and keeps only those that hold the number expected there, so a slot left from
an earlier lap is never replayed. (Rewriting the whole record per event cost O(events
kept): up to 100 messages pickled and sent for every notification.)
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.cache import cache

from mcp_endpoint.engine.protocol import Outgoing


@dataclass
class StreamRecord:
    kind: str  # "get" or "post"
    events: list[tuple[int, Outgoing]] = field(default_factory=list)  # (seq, message)
    done: bool = False  # the stream has sent its last event (a POST stream's response)
    kept: int = 0  # events written to the cache so far, dropped ones included
    saved_seq: int = 0  # the highest id among them: events after it are not written yet

    def after(self, seq: int) -> list[tuple[int, Outgoing]]:
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


def _slot_key(key: str, slot: int) -> str:
    return f"{key}:{slot}"


async def save(session_id: str, stream_id: str, record: StreamRecord) -> None:
    """Write the events appended to `record` since its last save, and its head."""
    limit = settings.MCP_SSE_KEEP_EVENTS
    fresh = []
    for seq, message in reversed(record.events):
        if seq <= record.saved_seq:
            break
        fresh.append((seq, message))
    fresh.reverse()
    if len(record.events) > limit:
        del record.events[:-limit]
    key = _key(session_id, stream_id)
    values: dict[str, Any] = {}
    for position, (seq, message) in enumerate(fresh):
        if position >= len(fresh) - limit:  # (more than fit: only the last ones are kept)
            values[_slot_key(key, record.kept % limit)] = (record.kept, seq, message)
        record.kept += 1
        record.saved_seq = seq
    values[key] = {"kind": record.kind, "done": record.done, "kept": record.kept, "seq": record.saved_seq}
    await sync_to_async(cache.set_many)(values, settings.MCP_SSE_KEEP_SECONDS)


async def load(session_id: str, stream_id: str) -> StreamRecord | None:
    return await sync_to_async(_read)(_key(session_id, stream_id), settings.MCP_SSE_KEEP_EVENTS)


def _read(key: str, limit: int) -> StreamRecord | None:
    """The head, then the slots in its window (one `get_many`); in one hop from the loop."""
    head = cache.get(key)
    if not isinstance(head, dict):
        return None
    kept = int(head.get("kept", 0))
    numbers = range(max(0, kept - limit), kept)
    found = cache.get_many([_slot_key(key, number % limit) for number in numbers])
    events = []
    for number in numbers:
        item = found.get(_slot_key(key, number % limit))
        if isinstance(item, (tuple, list)) and item[0] == number:  # not a slot of an earlier lap
            events.append((int(item[1]), item[2]))
    return StreamRecord(
        head.get("kind", "get"), events, bool(head.get("done")), kept=kept, saved_seq=int(head.get("seq", 0))
    )
