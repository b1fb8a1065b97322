"""The long-lived response streams of Streamable HTTP (`transports.http`): a session's GET
stream, a GET resuming a POST stream that a tool cut off mid-call, and the stream of a
stateless `subscriptions/listen` request; with what feeds them (the channel layer's change
events) and what ends them (the client going away).

The HTTP app checks the request and finds the session; these serve it from then on.
"""

from __future__ import annotations

import asyncio
from typing import Any

from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer

from common.groups import receive_forever
from mcp_endpoint.engine import relay
from mcp_endpoint.engine.protocol import Outgoing, SessionState
from mcp_endpoint.engine.session import ServerSession
from mcp_endpoint.engine.tools import Caller
from mcp_endpoint.models import AccessToken
from mcp_endpoint.transports import http_sessions, sse_store
from mcp_endpoint.transports.asgi_http import AsgiReceive, AsgiSend
from mcp_endpoint.transports.sse_stream import SseStream, primes

KEEPALIVE_SECONDS = 15.0

_aload_session = sync_to_async(http_sessions.load)


async def serve_session_stream(
    receive: AsgiReceive,
    send: AsgiSend,
    caller: Caller,
    token: AccessToken,
    session_id: str,
    state: SessionState,
    resume: tuple[str, int] | None,
    record: sse_store.StreamRecord | None,
) -> None:
    """A session's GET stream: tool list and subscribed resource changes, with keep-alive
    comments, until the client goes away. Resumed (`resume`, the stream's `record`), it
    first replays the events the client missed."""
    queue: asyncio.Queue[Outgoing] = asyncio.Queue(maxsize=1000)

    async def enqueue(message: Outgoing) -> None:
        if not queue.full():
            queue.put_nowait(message)

    session = ServerSession(caller, enqueue, state=state)
    session.listen_for_changes()
    headers = [("mcp-session-id", session_id)]
    priming = primes(state.protocol_version)
    if resume and record is not None:  # the GET stream again: what it missed, then on
        stream_id, seen = resume
        stream = SseStream(
            send,
            headers,
            session_id=session_id,
            stream_id=stream_id,
            record=record,
            seen=seen,
        )
        await stream.open(priming=False)
        for seq, message in record.after(seen):
            await stream.replay(sse_store.event_id(resume[0], seq), message)
    else:
        stream = SseStream(
            send, headers, priming=priming, session_id=session_id, record=sse_store.StreamRecord("get")
        )
        await stream.open()
    disconnected = asyncio.ensure_future(wait_disconnect(receive))
    changes = asyncio.ensure_future(forward_changes(session, session_id, token))
    try:
        while not disconnected.done():
            getter = asyncio.ensure_future(queue.get())
            done, _ = await asyncio.wait(
                {getter, disconnected}, timeout=KEEPALIVE_SECONDS, return_when="FIRST_COMPLETED"
            )
            if getter in done:
                await stream.event(getter.result())
            else:
                getter.cancel()
                if not done:
                    await stream.comment("keep-alive")
    except OSError:
        pass
    finally:
        disconnected.cancel()
        changes.cancel()
        await session.close()


async def resume_post_stream(
    receive: AsgiReceive, send: AsgiSend, session_id: str, stream_id: str, seen: int
) -> None:
    """A GET resuming a POST stream cut off mid-call: the events it missed, then the
    rest as the call (in this process or another) produces them, up to its response."""
    live: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    with relay.expecting("stream", session_id, stream_id, live.put_nowait):
        await relay.listen()
        record = await sse_store.load(session_id, stream_id)  # again, now that nothing is missed
        stream = SseStream(send, [("mcp-session-id", session_id)])
        await stream.open(priming=False)
        done = record is None or record.done
        for seq, message in record.after(seen) if record else []:
            await stream.replay(sse_store.event_id(stream_id, seq), message)
            seen = seq
        disconnected = asyncio.ensure_future(wait_disconnect(receive))
        try:
            while not done and not disconnected.done():
                getter = asyncio.ensure_future(live.get())
                finished, _ = await asyncio.wait(
                    {getter, disconnected}, timeout=KEEPALIVE_SECONDS, return_when="FIRST_COMPLETED"
                )
                if getter not in finished:
                    getter.cancel()
                    if not finished:
                        await stream.comment("keep-alive")
                    continue
                item = getter.result()
                if item["message"] is not None and item["seq"] > seen:
                    await stream.replay(sse_store.event_id(stream_id, item["seq"]), item["message"])
                    seen = item["seq"]
                done = bool(item["last"])
        finally:
            disconnected.cancel()
        await stream.finish()


async def listen_stream(
    receive: AsgiReceive, session: ServerSession, message: dict[str, Any], stream: SseStream
) -> Outgoing | None:
    """`subscriptions/listen`: the response stream stays open (with keep-alive comments),
    carrying change notifications, until the client goes away; then None. A refused
    request (bad params) answers at once."""
    changes: list[asyncio.Task[None]] = []

    async def hear_changes() -> None:
        if not changes:
            changes.append(asyncio.ensure_future(forward_changes(session)))

    session.on_subscribe = hear_changes
    work = asyncio.ensure_future(session.handle(message, notify=stream.event))
    gone = asyncio.ensure_future(wait_disconnect(receive))
    try:
        while True:
            done, _ = await asyncio.wait(
                {work, gone}, timeout=KEEPALIVE_SECONDS, return_when=asyncio.FIRST_COMPLETED
            )
            if done:
                break
            if stream.started:
                await stream.comment("keep-alive")
    finally:
        for task in (work, gone, *changes):
            task.cancel()
        await session.close()
    return work.result() if work.done() and not work.cancelled() else None


async def forward_changes(
    session: ServerSession, session_id: str | None = None, token: AccessToken | None = None
) -> None:
    """Feed the channel layer's change events to a GET stream's session (`session_id`) or a
    stateless `subscriptions/listen` request's.

    A session's subscriptions are made by POSTs, possibly to another process, so its state
    is reloaded from the database before each event is matched against them.
    """
    layer = get_channel_layer()
    groups, types = session.resources.change_groups, session.resources.change_types
    if layer is None or not groups:
        return
    channel = await layer.new_channel()
    for group in groups:
        await layer.group_add(group, channel)
    # Received in a task of its own, which ends cancelled whichever way this ends: channels-redis's
    # pub/sub layer lets go of a channel only when a receive on it is cancelled.
    heard: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    hearing = asyncio.ensure_future(receive_forever(layer, channel, heard.put, "change stream"))
    try:
        while True:
            message = await heard.get()
            event = message.get("event")
            if message.get("type") not in types or not isinstance(event, dict):
                continue
            if session_id is not None and token is not None:
                state = await _aload_session(session_id, token)
                if state is None:
                    return
                session.state.subscriptions = state.subscriptions
            await session.on_change(event)
    finally:
        hearing.cancel()
        for group in groups:
            await layer.group_discard(group, channel)


async def wait_disconnect(receive: AsgiReceive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
