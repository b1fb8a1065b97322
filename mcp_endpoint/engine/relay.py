"""Messages for work in flight on a Streamable HTTP session, whichever process runs it.

Over HTTP, what concerns a running request arrives as another POST, possibly at another
daphne process: the client's answer to a server-to-client request (`sampling/createMessage`,
`elicitation/create`), a `notifications/cancelled`, or a GET resuming a stream. The process
running the work registers a handler here under (kind, session id, key); a delivery is
handed to the local handler when there is one, else broadcast once on the channel layer,
where every process that has work waiting listens (one channel per process) and picks up
what it registered. Nothing touches the channel layer on the hot path: a process joins the
group the first time something waits, and deliveries are rare (answers, cancellations).

Keys are scoped by session id: a client can only reach work of a session whose id it holds
(and the transport has checked that session belongs to its token).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from channels.layers import get_channel_layer

from common.groups import ProcessChannel

logger = logging.getLogger(__name__)

GROUP = "mcp.relay"
MESSAGE_TYPE = "mcp.relay"

Handler = Callable[[Any], None]
Key = str | int  # a JSON-RPC id
_handlers: dict[tuple[str, str, Key], Handler] = {}


async def _on_message(message: dict[str, Any]) -> None:
    key = message.get("key")
    if not isinstance(key, (str, int)):
        return
    handler = _handlers.get((str(message.get("kind")), str(message.get("session")), key))
    if handler is not None:
        handler(message.get("payload"))


_listener = ProcessChannel(_on_message, "the MCP relay", (GROUP,))


async def listen() -> None:
    """Make sure deliveries broadcast by other processes reach this one (call before
    registering work that another process may have to reach). When the channel layer is
    down, work here goes on; only what other processes deliver cannot reach it."""
    await _listener.join()


@contextmanager
def expecting(kind: str, session_id: str, key: Key, handler: Handler) -> Iterator[None]:
    """Route deliveries of (kind, session_id, key) to `handler` while the block runs."""
    entry = (kind, session_id, key)
    _handlers[entry] = handler
    try:
        yield
    finally:
        if _handlers.get(entry) is handler:
            del _handlers[entry]


async def deliver(kind: str, session_id: str, key: Key, payload: Any, *, broadcast: bool = True) -> None:
    """Hand `payload` to whatever waits for (kind, session_id, key), here or (`broadcast`)
    in another process. Nothing waiting anywhere: it is dropped (a late answer, a finished
    call)."""
    handler = _handlers.get((kind, session_id, key))
    if handler is not None:
        handler(payload)
        return
    layer = get_channel_layer() if broadcast else None
    if layer is None:
        return
    message = {"type": MESSAGE_TYPE, "kind": kind, "session": session_id, "key": key, "payload": payload}
    try:
        await layer.group_send(GROUP, message)
    except Exception:  # the layer is down: the waiting side times out, as if the message were lost
        logger.exception("could not relay %s for an MCP session", kind)
