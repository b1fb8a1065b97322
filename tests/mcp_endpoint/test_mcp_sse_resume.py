"""A POST stream cut off mid-call (SEP-1699), in-process: what a client resuming it can find,
and when."""

import pickle

from asgiref.sync import async_to_sync
from django.core.cache.backends.base import BaseCache

from mcp_endpoint.transports import sse_store
from mcp_endpoint.transports.http import SseStream

SESSION = "session-for-tests"


class Wire:
    """The ASGI `send` of a response; notes, at the moment the response ends, what a client
    resuming the stream would find."""

    def __init__(self, stream_id: str) -> None:
        self.chunks: list[bytes] = []
        self.stream_id = stream_id
        self.record_when_ended: sse_store.StreamRecord | None = None

    async def send(self, message: dict) -> None:
        if message["type"] == "http.response.body":
            self.chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                self.record_when_ended = await sse_store.load(SESSION, self.stream_id)


def _cut_off_stream(stream_id: str) -> tuple[SseStream, Wire]:
    wire = Wire(stream_id)
    stream = SseStream(lambda m: wire.send(m), [], session_id=SESSION, stream_id=wire.stream_id)
    stream.watch_cut_off()
    return stream, wire


def test_a_cut_off_stream_is_resumable_before_its_response_ends_and_keeps_what_follows():
    async def scenario():
        stream, wire = _cut_off_stream("a1b2c3d4")
        await stream.event({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}})
        await stream.close()
        await stream.event({"jsonrpc": "2.0", "id": 1, "result": {}}, last=True)
        return stream, wire, await sse_store.load(SESSION, wire.stream_id)

    stream, wire, record = async_to_sync(scenario)()
    assert stream.cut_off.done()
    assert wire.chunks[0].startswith(b"id: a1b2c3d4-1\nretry: ")  # priming, with the retry
    assert wire.record_when_ended is not None and wire.record_when_ended.events == []
    assert b"a1b2c3d4-2" in wire.chunks[0]  # the progress went out live, so it is not kept
    assert record.kind == "post" and record.done
    assert record.after(1) == [(3, {"jsonrpc": "2.0", "id": 1, "result": {}})]
    assert record.after(3) == []


def test_a_cut_off_call_that_ends_without_a_response_says_so():
    async def scenario():
        stream, wire = _cut_off_stream("e5f6a7b8")
        await stream.close()
        await stream.finish()  # the call was cancelled
        return await sse_store.load(SESSION, wire.stream_id)

    record = async_to_sync(scenario)()
    assert record.done and record.events == []


def test_event_ids_are_parsed_only_in_the_hubs_own_form():
    assert sse_store.parse_event_id("a1b2c3d4-12") == ("a1b2c3d4", 12)
    for foreign in (None, "", "12", "a1b2-x", "../a-1", "a b-1"):
        assert sse_store.parse_event_id(foreign) is None


def _get_stream(stream_id: str, record: sse_store.StreamRecord, seen: int = 0) -> tuple[SseStream, Wire]:
    """A resumable GET stream, as `/mcp` opens one (or reopens it for a Last-Event-ID)."""
    wire = Wire(stream_id)
    stream = SseStream(
        lambda m: wire.send(m), [], session_id=SESSION, stream_id=stream_id, record=record, seen=seen
    )
    return stream, wire


def _note(n: int) -> dict:
    return {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": f"home://{n}"}}


def test_a_get_stream_resumed_after_many_events_replays_the_last_ones_and_numbers_on(settings):
    """The last MCP_SSE_KEEP_EVENTS events are kept; a GET resuming with the id of one it saw
    gets those after it (from the shared cache, as another process would), then the stream
    goes on under the same id with the next numbers."""
    settings.MCP_SSE_KEEP_EVENTS = 5

    async def scenario():
        stream, _ = _get_stream("c0ffee01", sse_store.StreamRecord("get"))
        await stream.open()  # priming: id 1
        for n in range(2, 14):  # ids 2..13
            await stream.event(_note(n))
        record = await sse_store.load(SESSION, "c0ffee01")
        kept, missed = [n for n, _ in record.events], record.after(10)
        again, wire = _get_stream("c0ffee01", record, seen=10)
        await again.open(priming=False)
        await again.event(_note(14))
        return kept, missed, wire, await sse_store.load(SESSION, "c0ffee01")

    kept, missed, wire, later = async_to_sync(scenario)()
    assert kept == [9, 10, 11, 12, 13]  # the oldest dropped
    assert missed == [(11, _note(11)), (12, _note(12)), (13, _note(13))]
    assert b"id: c0ffee01-14\n" in b"".join(wire.chunks)
    assert [n for n, _ in later.events] == [10, 11, 12, 13, 14]
    assert later.after(13) == [(14, _note(14))] and later.kind == "get" and not later.done


def test_keeping_an_event_costs_the_same_however_many_are_kept(monkeypatch):
    """Bytes written to the cache per event of a GET stream: the same at the 100th as at the
    2nd (rewriting the whole record made them grow with every event)."""
    from django.core.cache import caches

    backend = caches["default"]
    written: list[int] = []
    original = type(backend).set

    def counting_set(self, key, value, *args, **kwargs):
        written.append(len(pickle.dumps(value)))
        return original(self, key, value, *args, **kwargs)

    monkeypatch.setattr(type(backend), "set", counting_set)
    if hasattr(type(backend), "set_many") and type(backend).set_many is not BaseCache.set_many:
        original_many = type(backend).set_many

        def counting_set_many(self, data, *args, **kwargs):
            written.extend(len(pickle.dumps(value)) for value in data.values())
            return original_many(self, data, *args, **kwargs)

        monkeypatch.setattr(type(backend), "set_many", counting_set_many)

    async def scenario():
        stream, _ = _get_stream("feedbead", sse_store.StreamRecord("get"))
        await stream.open()
        per_event = []
        for n in range(100):
            written.clear()
            await stream.event(_note(n))
            per_event.append(sum(written))
        return per_event

    per_event = async_to_sync(scenario)()
    assert per_event[-1] < 2 * per_event[1]
