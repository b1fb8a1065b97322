"""`subscriptions/listen` (2026-07-28, SEP-2575): a stateless client's stream of change
notifications.

There is no session and no GET stream in that revision: the client sends a
`subscriptions/listen` request naming what it wants (`toolsListChanged`,
`resourceSubscriptions`...), and the response stream of that request carries, first,
`notifications/subscriptions/acknowledged` with what the server will honour, then each
matching notification, every frame tagged with the request's id under
`_meta["io.modelcontextprotocol/subscriptionId"]`. It ends when the client cancels or goes
away; nothing is replayed (a client that comes back listens again and re-reads).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from mcp_endpoint.engine import jsonrpc

META_SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
BACKLOG = 256  # notifications waiting for a slow reader; they are level triggers, so duplicates are dropped


@dataclass
class Listener:
    tools: bool
    uris: frozenset[str]
    queue: asyncio.Queue[tuple[str, dict[str, Any]]] = field(default_factory=lambda: asyncio.Queue(BACKLOG))
    pending: set[tuple[str, str]] = field(default_factory=set)

    def offer(self, method: str, params: dict[str, Any]) -> bool:
        """Queue a notification; False when one about the same thing waits unsent (once is
        enough) or the backlog is full."""
        key = (method, _about(params))
        if key in self.pending or self.queue.full():
            return False
        self.pending.add(key)
        self.queue.put_nowait((method, params))
        return True


# Queues a notification (method, params) on one listener's stream (`Listener.offer`).
Offer = Callable[[str, dict[str, Any]], bool]
# Watches something for one listener (a task's state, SEP-2663) and offers what changes.
Watch = Callable[[Offer], Awaitable[None]]


def _about(params: dict[str, Any]) -> str:
    """What a notification is about: its resource, or its task."""
    return str(params.get("uri") or params.get("taskId") or "")


class ListenStreams:
    """The listen streams open on one engine session."""

    def __init__(self) -> None:
        self._open: list[Listener] = []

    def tools_changed(self) -> None:
        for listener in self._open:
            if listener.tools:
                listener.offer("notifications/tools/list_changed", {})

    def resources_updated(self, uris: Iterable[str]) -> None:
        for uri in uris:
            for listener in self._open:
                if uri in listener.uris:
                    listener.offer("notifications/resources/updated", {"uri": uri})

    @property
    def uris(self) -> frozenset[str]:
        return frozenset().union(*(listener.uris for listener in self._open))

    async def serve(
        self,
        request_id: jsonrpc.RequestId,
        honored: dict[str, Any],
        notify: Callable[[dict[str, Any]], Awaitable[None]],
        watch: Watch | None = None,
    ) -> None:
        """Acknowledge, then forward matching notifications (and what `watch` offers) until
        cancelled."""
        listener = Listener(
            tools=bool(honored.get("toolsListChanged")),
            uris=frozenset(honored.get("resourceSubscriptions", ())),
        )
        meta = {META_SUBSCRIPTION_ID: request_id}
        self._open.append(listener)
        watching = asyncio.ensure_future(watch(listener.offer)) if watch is not None else None
        try:
            acknowledged = {"notifications": honored, "_meta": meta}
            await notify(jsonrpc.notification("notifications/subscriptions/acknowledged", acknowledged))
            while True:
                method, params = await listener.queue.get()
                listener.pending.discard((method, _about(params)))
                await notify(jsonrpc.notification(method, {**params, "_meta": meta}))
        finally:
            self._open.remove(listener)
            if watching is not None:
                watching.cancel()
