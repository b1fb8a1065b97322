"""A POST stream cut off mid-call (SEP-1699), in-process: what a client resuming it can find,
and when."""

from asgiref.sync import async_to_sync

from mcp_endpoint import sse_store
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
