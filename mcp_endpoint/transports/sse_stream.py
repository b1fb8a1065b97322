"""An SSE response over ASGI: `SseStream`, the framing of its events and what it keeps
so that a client can resume it (SEP-1699).

Used by the Streamable HTTP transport (`transports.http`) for the response stream of a
POST, the GET stream of a session and a GET resuming either.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from django.conf import settings

from mcp_endpoint.engine import jsonrpc, relay
from mcp_endpoint.engine.protocol import Outgoing
from mcp_endpoint.transports import sse_store
from mcp_endpoint.transports.asgi_http import AsgiSend


def _sse_event(data: Outgoing, event_id: str) -> bytes:
    return f"event: message\nid: {event_id}\ndata: {jsonrpc.dumps(data)}\n\n".encode()


SSE_HEADERS = (
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache, no-transform"),
    (b"x-accel-buffering", b"no"),
)


class SseStream:
    """One response stream; started lazily so a lone result goes out in one write.

    With a `session_id`, its events can be resumed (SEP-1699): a GET stream (its `record`
    of kind "get") keeps every event in `sse_store`; a POST stream keeps those written after a tool cut it
    off (`close()`), and relays each to a GET resuming it, in whichever process that GET is.
    """

    def __init__(
        self,
        send: AsgiSend,
        headers: list[tuple[str, str]],
        *,
        priming: bool = True,
        session_id: str | None = None,
        stream_id: str | None = None,
        record: sse_store.StreamRecord | None = None,
        seen: int = 0,
    ) -> None:
        self._send = send
        self._headers = headers
        self._priming_enabled = priming
        self._session_id = session_id
        self.stream_id = stream_id or uuid.uuid4().hex  # letters and digits: event ids are `<id>-<seq>`
        self._record = record or sse_store.StreamRecord("post")
        self._count = max([seen, *(n for n, _ in self._record.events)])  # the next event's id follows
        self.started = False
        self.detached = False  # cut off: events are kept, no longer written
        self.cut_off: asyncio.Future[None] | None = None  # set by `watch_cut_off`, done once cut off

    def _next_id(self) -> str:
        self._count += 1
        return sse_store.event_id(self.stream_id, self._count)

    def _start_message(self, length: int | None = None) -> dict[str, Any]:
        headers = [*SSE_HEADERS, *((k.encode("latin-1"), v.encode("latin-1")) for k, v in self._headers)]
        if length is not None:  # the whole stream in one write: no chunked framing needed
            headers.append((b"content-length", b"%d" % length))
        return {"type": "http.response.start", "status": 200, "headers": headers}

    def _priming(self) -> bytes:
        # Clients before 2025-11-25 may not expect an event with empty data.
        if not self._priming_enabled:
            return b""
        return f"id: {self._next_id()}\nretry: {settings.MCP_SSE_RETRY_MS}\ndata: \n\n".encode()

    @property
    def _keep_all(self) -> bool:
        return self._record.kind == "get"

    def watch_cut_off(self) -> asyncio.Future[None]:
        self.cut_off = asyncio.get_running_loop().create_future()
        return self.cut_off

    async def open(self, *, priming: bool = True) -> None:
        """Send the headers and the priming event (an id and empty data) now."""
        await self._send(self._start_message())
        body = self._priming() if priming else b""
        await self._send({"type": "http.response.body", "body": body, "more_body": True})
        self.started = True

    async def event(self, message: Outgoing, *, last: bool = False) -> None:
        if self.detached:
            self._count += 1
            await self._keep(self._count, message, last)
            return
        if self.started:
            event_id = self._next_id()
            chunk = _sse_event(message, event_id)
        else:  # headers, priming event and this one in a single write
            priming = self._priming()
            event_id = self._next_id()
            chunk = priming + _sse_event(message, event_id)
            await self._send(self._start_message(len(chunk) if last else None))
            self.started = True
        await self._send({"type": "http.response.body", "body": chunk, "more_body": not last})
        if self._keep_all:
            await self._keep(self._count, message, last)

    async def replay(self, event_id: str, message: Outgoing) -> None:
        """Send an event kept from another stream, under its own id."""
        chunk = _sse_event(message, event_id)
        await self._send({"type": "http.response.body", "body": chunk, "more_body": True})

    async def _keep(self, seq: int, message: Outgoing | None, last: bool) -> None:
        """Keep an event (None: the stream ended without one, e.g. its call was cancelled)."""
        if self._session_id is None:
            return
        if message is not None:
            self._record.events.append((seq, message))
        self._record.done = last
        await sse_store.save(self._session_id, self.stream_id, self._record)
        if not self._keep_all:  # a POST stream cut off: a GET resuming it follows it live
            payload = {"seq": seq, "message": message, "last": last}
            await relay.deliver("stream", self._session_id, self.stream_id, payload)

    async def close(self) -> None:
        """End the response now (a tool's `close_stream`); later events are kept instead."""
        if self.detached or self._session_id is None or not self._priming_enabled:
            return  # without an event id the client could not resume: keep the stream
        if not self.started:
            await self.open()
        self.detached = True
        # Saved before the response ends: the client may resume as soon as it sees the end.
        await sse_store.save(self._session_id, self.stream_id, self._record)
        await self._send({"type": "http.response.body", "body": b"", "more_body": False})
        if self.cut_off is not None:
            self.cut_off.set_result(None)

    async def comment(self, text: str) -> None:
        await self._send({"type": "http.response.body", "body": f": {text}\n\n".encode(), "more_body": True})

    async def finish(self) -> None:
        if self.detached:  # tell a GET resuming it that nothing more will come
            await self._keep(self._count, None, True)
            return
        if not self.started:
            await self._send(self._start_message())
            self.started = True
        await self._send({"type": "http.response.body", "body": b"", "more_body": False})


def primes(version: str | None) -> bool:
    """Whether a stream of this protocol version starts with a priming event."""
    return version is None or version >= "2025-11-25"
