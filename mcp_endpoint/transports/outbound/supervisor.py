"""Keeping the outbound MCP endpoints connected (`python manage.py serve` runs a `Supervisor`).

Every MCP_ENDPOINT_POLL_SECONDS the supervisor reads the enabled endpoints: it connects those
it can claim (`endpoints.claim`, a lease in the endpoint's row, so that of several hub
processes over one database only one holds each connection), renews its claim on those it
holds, adding the calls they served, and lets go of those removed, disabled, changed (it
connects again at once with the new settings) or claimed by another process. A claim lapses
after six rounds without renewal: the endpoints of a process that died are taken over then.

Each held endpoint is an `EndpointLink`: connect (`transports.outbound.serve_endpoint`),
serve until the connection ends, wait, connect again. The wait starts at 1 s and doubles up
to 600 s; a connection that stayed up for a minute starts it over. WebSocket pings every
MCP_ENDPOINT_PING_SECONDS find a dead connection. The status (connected, since when, the
last error) is written to the row; the URL and its secret never reach a log or the row's
last error (`endpoint_urls.redact`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import traceback
from collections.abc import Callable
from datetime import timedelta

from asgiref.sync import sync_to_async
from django.conf import settings
from django.utils import timezone
from websockets.exceptions import WebSocketException

from common.holders import process_name
from mcp_endpoint.engine.registry import registry
from mcp_endpoint.transports.outbound import endpoints
from mcp_endpoint.transports.outbound.connection import serve_endpoint
from mcp_endpoint.transports.outbound.endpoint_urls import redact
from mcp_endpoint.transports.outbound.endpoints import CallCounts, EndpointConfig

logger = logging.getLogger(__name__)

BACKOFF_FIRST = 1.0
BACKOFF_MAX = 600.0
STABLE_SECONDS = 60.0  # a connection up this long resets the backoff
LEASE_ROUNDS = 6  # a claim not renewed for this many rounds lapses
STOP_SECONDS = 1.0  # for the links to close their sockets when the hub stops (then: let go)


class EndpointLink:
    """One endpoint this process holds: connected, and connected again whenever it drops."""

    def __init__(self, config: EndpointConfig, holder: str, on_call: Callable[[], None]) -> None:
        self.config = config
        self.holder = holder
        self.on_call = on_call
        self.task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.task = asyncio.ensure_future(self.run())

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task

    async def run(self) -> None:
        config, loop = self.config, asyncio.get_running_loop()
        delay = BACKOFF_FIRST
        while True:
            opened_at: float | None = None

            async def opened() -> None:
                nonlocal opened_at
                opened_at = loop.time()
                await self._record(endpoints.record_connected, config.pk, self.holder)
                logger.info("MCP endpoint %s: connected to %s", config.name, config.masked_url)

            try:
                ended = await serve_endpoint(
                    config.url, config.caller(), on_open=opened, on_call=self.on_call
                )
            except (OSError, TimeoutError, WebSocketException) as exc:
                ended = f"could not connect: {type(exc).__name__}: {exc}"
            except Exception:  # a fault of the hub's: logged, and the link goes on
                logger.error(
                    "MCP endpoint %s: %s", config.name, redact(traceback.format_exc(), config.url).strip()
                )
                ended = "internal error (see the hub's log)"
            if opened_at is not None and loop.time() - opened_at >= STABLE_SECONDS:
                delay = BACKOFF_FIRST
            error = redact(ended, config.url)
            await self._record(endpoints.record_disconnected, config.pk, self.holder, error)
            logger.warning(
                "MCP endpoint %s (%s): %s; connecting again in %.0f s",
                config.name,
                config.masked_url,
                error,
                delay,
            )
            await asyncio.sleep(delay)
            delay = min(delay * 2, BACKOFF_MAX)

    async def _record(self, write: Callable[..., None], *args: object) -> None:
        """A status write; the database being down must not end the link."""
        try:
            await sync_to_async(write)(*args)
        except Exception:
            logger.warning("MCP endpoint %s: could not record its status", self.config.name, exc_info=True)


class Supervisor:
    """Keeps every enabled endpoint this process can claim connected (module docstring)."""

    def __init__(self, holder: str | None = None) -> None:
        self.holder = holder or process_name()
        self.links: dict[int, EndpointLink] = {}
        self._held_until: dict[int, float] = {}  # loop time a link's claim lapses, as last renewed
        self._calls: CallCounts = {}  # served since the last round, counted in the rows at the next
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.ensure_future(self._run())

    async def stop(self) -> None:
        """Close every connection and let go of the endpoints (another process may take them)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        links, self.links = list(self.links.values()), {}
        if links:
            await asyncio.wait([asyncio.ensure_future(link.stop()) for link in links], timeout=STOP_SECONDS)
        counts, self._calls = self._calls, {}
        try:
            await sync_to_async(_let_go)(self.holder, counts)
        except Exception:
            logger.warning("MCP endpoints: could not let go of them (their claims lapse)", exc_info=True)

    async def _run(self) -> None:
        try:  # the device gateway's view, for the devices' tools
            await registry.start()
        except Exception:
            logger.exception("MCP endpoints: device tools are unavailable (their view did not load)")
        while True:
            try:
                await self.round()
            except Exception:
                logger.warning("MCP endpoints: could not read or renew them", exc_info=True)
                await self._drop_lapsed()
            await asyncio.sleep(settings.MCP_ENDPOINT_POLL_SECONDS)

    def lease(self) -> timedelta:
        return timedelta(seconds=LEASE_ROUNDS * settings.MCP_ENDPOINT_POLL_SECONDS)

    async def round(self) -> None:
        """Read the endpoints, claim or renew, start and stop links (one round)."""
        counts, self._calls = self._calls, {}
        lease = self.lease()
        started = asyncio.get_running_loop().time()
        try:
            wanted, held = await sync_to_async(_claim_round)(self.holder, lease, counts)
        except Exception:
            for pk, (calls, at) in counts.items():  # counted at the next round instead
                more, last = self._calls.get(pk, (0, at))
                self._calls[pk] = (calls + more, max(at, last))
            raise
        for pk in list(self.links):
            if pk not in wanted:
                await self._drop(pk, "removed or disabled", release=True)
            elif pk not in held:
                await self._drop(pk, "another hub process holds it", release=True)
            elif wanted[pk] != self.links[pk].config:  # connected again below
                await self._drop(pk, "its settings changed", release=False)
        for pk in held:
            self._held_until[pk] = started + lease.total_seconds()
            if pk not in self.links:
                link = EndpointLink(wanted[pk], self.holder, functools.partial(self._count, pk))
                self.links[pk] = link
                link.start()

    def _count(self, pk: int) -> None:
        calls, _last = self._calls.get(pk, (0, None))
        self._calls[pk] = (calls + 1, timezone.now())

    async def _drop(self, pk: int, why: str, *, release: bool) -> None:
        link = self.links.pop(pk)
        self._held_until.pop(pk, None)
        await link.stop()
        logger.info("MCP endpoint %s: disconnected, %s", link.config.name, why)
        if release:
            with contextlib.suppress(Exception):
                await sync_to_async(endpoints.release)(self.holder, [pk])

    async def _drop_lapsed(self) -> None:
        """The database cannot be reached: links whose claim has lapsed stop (another process
        may hold them by now)."""
        now = asyncio.get_running_loop().time()
        for pk in [pk for pk, until in self._held_until.items() if until <= now]:
            await self._drop(pk, "its claim lapsed (the database cannot be reached)", release=False)


def _claim_round(
    holder: str, lease: timedelta, counts: CallCounts
) -> tuple[dict[int, EndpointConfig], set[int]]:
    """The calls served since the last round counted; the enabled endpoints, and those `holder`
    holds after claiming or renewing each."""
    endpoints.add_calls(counts)
    wanted = {config.pk: config for config in endpoints.enabled_endpoints()}
    return wanted, {pk for pk in wanted if endpoints.claim(pk, holder, lease)}


def _let_go(holder: str, counts: CallCounts) -> None:
    endpoints.add_calls(counts)
    endpoints.release(holder)
