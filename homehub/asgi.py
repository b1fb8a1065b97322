"""ASGI entry point (`daphne homehub.asgi:application`).

HTTP: `/mcp` goes straight to the MCP Streamable HTTP app (no Django middleware on the
hot path; SECURE_SSL_REDIRECT applies to it all the same, homehub/https_only.py); everything
else to Django (`/healthz` and `/metrics` without waiting for the device gateway), with
bodies bounded by HTTP_MAX_BODY_BYTES. `/mcp` and the OAuth endpoints a client calls itself
answer browser-based clients' CORS (mcp_endpoint/transports/cors.py).
WebSockets: Channels' routes of every app. The device gateway starts with the process's
first connection.
"""

import asyncio
import atexit
import contextlib
import gc
import os
import sys
from collections.abc import Awaitable, Callable

from django.core.asgi import get_asgi_application
from django.urls import reverse

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "homehub.settings")
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402  (needs Django set up first)
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from devices.agents.gateway import with_gateway  # noqa: E402
from devices.agents.link import detach_all  # noqa: E402
from homehub.body_limit import limit_body  # noqa: E402
from homehub.https_only import https_only  # noqa: E402
from homehub.routing import websocket_urlpatterns  # noqa: E402
from mcp_endpoint.transports.cors import with_cors  # noqa: E402
from mcp_endpoint.transports.http import StreamableHttpApp  # noqa: E402

mcp_http_app = https_only(with_cors(StreamableHttpApp()))
django_http_app = limit_body(django_asgi_app)
oauth_http_app = with_cors(django_http_app)
MCP_PATHS = {"/mcp", "/mcp/"}
# The OAuth endpoints a client calls itself (as homehub/urls.py names them).
OAUTH_CLIENT_ROUTES = [
    "oauth-resource",
    "oauth-resource-mcp",
    "oauth-server",
    "oauth-token",
    "oauth-register",
    "oauth-revoke",
]
OAUTH_CLIENT_PATHS = {reverse(name) for name in OAUTH_CLIENT_ROUTES}


async def http_router(scope, receive, send):
    path = scope.get("path")
    if path in MCP_PATHS:
        app = mcp_http_app
    elif path in OAUTH_CLIENT_PATHS:
        app = oauth_http_app
    else:
        app = django_http_app
    await app(scope, receive, send)


hub_app = with_gateway(
    ProtocolTypeRouter(
        {
            "http": http_router,
            "websocket": AuthMiddlewareStack(URLRouter(websocket_urlpatterns)),
        }
    )
)
# Probes and scrapers skip the gateway's start: they must answer (503) even when the
# database or Redis it needs is down.
OPS_PATHS = {"/healthz", "/metrics"}


# Set once the process has begun to stop: what arrives then is turned away at the door, so
# that no new request starts a Django thread the stopping loop would have to wait for.
stopping = False


async def application(scope, receive, send):
    if stopping and scope["type"] in ("http", "websocket"):
        await _turn_away(scope, send)
    elif scope["type"] == "http" and scope.get("path") in OPS_PATHS:
        await django_http_app(scope, receive, send)
    else:
        await hub_app(scope, receive, send)


async def _turn_away(scope, send) -> None:
    """503 (a client retries at another process or after the restart); a WebSocket is refused
    at its handshake."""
    if scope["type"] == "websocket":
        await send({"type": "websocket.close"})
        return
    body = b"the hub is stopping\n"
    headers = [(b"content-type", b"text/plain"), (b"retry-after", b"1"), (b"connection", b"close")]
    await send({"type": "http.response.start", "status": 503, "headers": headers})
    await send({"type": "http.response.body", "body": body})


EXIT_SECONDS = 3.0
QUIET_SECONDS = 0.1
LET_GO_SECONDS = 1.5  # a stop waiting for Django's database thread (a request holds it) is cut here
# What this process lets go of cleanly before the rest is ended, beside its devices and within
# the same LET_GO_SECONDS (`serve` adds its outbound MCP endpoints: connections closed, claims
# given up). The MQTT worker and the demo stop in Twisted triggers of their own, beside this
# (measured: putting them here lengthened the let-go phase under traffic enough for a request
# thread to be left waiting on the stopped loop, 1 round in 24 on PostgreSQL).
# A "before shutdown" trigger of its own would be cancelled with everything else.
before_stop: list[Callable[[], Awaitable[None]]] = []
SERVERS_SECONDS = 2.0
# What `serve` runs beside daphne on this loop and stops cleanly on the way out (the device
# listener's broker), once its devices are recorded offline, before everything still running
# is ended.
servers_to_stop: list[Callable[[], Awaitable[None]]] = []


def _cancel_pending(loop: asyncio.AbstractEventLoop) -> set[asyncio.Task]:
    """Cancel every task of `loop` but the current one; the tasks cancelled."""
    pending = asyncio.all_tasks(loop) - {asyncio.current_task(loop)}
    for task in pending:
        task.cancel()
    return pending


async def _until_quiet(deadline: float) -> None:
    """Cancel every other task, again and again, until none is left for a while (or
    `deadline`): a task a Django thread started meanwhile (async_to_sync) is cancelled too, so
    the thread returns.

    A task is cancelled only once an earlier pass saw it, when it has taken its first step: a
    task cancelled before that never runs its coroutine's body, and async_to_sync's thread,
    whose answer that body gives, would wait for it forever, and the process would never exit
    (seen in tests/homehub/test_shutdown.py on PostgreSQL)."""
    loop = asyncio.get_running_loop()
    seen: set[asyncio.Task] = set()
    while loop.time() < deadline:
        others = asyncio.all_tasks(loop) - {asyncio.current_task(loop)}
        if not others and not seen:
            return
        for task in others & seen:
            task.cancel()
        seen = others
        await asyncio.sleep(QUIET_SECONDS)  # a thread may be about to start one


async def _stop() -> None:
    """Daphne ends its connections without their disconnect: this process's devices are let
    go first (their calls in flight fail as disconnected) and recorded offline, so that they
    are offline as the process exits, not when another process notices, and so is what
    `before_stop` holds; then the servers `serve` runs beside daphne stop; then everything else
    still running is ended."""
    with contextlib.suppress(TimeoutError):
        let_go = [detach_all("the hub is stopping"), *(stop() for stop in before_stop)]
        await asyncio.wait_for(asyncio.gather(*let_go, return_exceptions=True), LET_GO_SECONDS)
    if servers_to_stop:
        stops = asyncio.gather(*(stop() for stop in servers_to_stop), return_exceptions=True)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stops, SERVERS_SECONDS)
    await _until_quiet(asyncio.get_running_loop().time() + EXIT_SECONDS)


def _before_shutdown():
    """Under daphne (Twisted), before the reactor stops the event loop: end what still runs
    (devices, connections, listeners, calls in flight) while the loop can still run what
    Django's threads wait for. A thread left waiting in async_to_sync (a REST call to a device,
    any request through a sync middleware to an async view) for a loop that has stopped would
    keep the process from ever exiting."""
    from twisted.internet import defer

    global stopping
    stopping = True
    return defer.Deferred.fromFuture(asyncio.ensure_future(_stop()))


if "twisted.internet.reactor" in sys.modules:  # daphne installed its reactor: served by daphne
    from twisted.internet import reactor

    # Twisted declares its interfaces' methods without `self`, for the mypy-zope plugin: mypy
    # alone shifts the arguments by one.
    reactor.addSystemEventTrigger("before", "shutdown", _before_shutdown)  # type: ignore[arg-type]


@atexit.register
def _end_pending_tasks() -> None:
    """What the loop still holds at exit (started during shutdown) is cancelled and run to its
    end here, before the interpreter tears its modules down: finalizing such a coroutine then
    crashed CPython 3.11 (a segmentation fault at SIGTERM)."""
    try:
        loop = asyncio.get_event_loop_policy().get_event_loop()
    except RuntimeError:  # this thread never had one: not served by daphne
        return
    if loop.is_closed() or loop.is_running():
        return
    pending = _cancel_pending(loop)
    if pending:
        loop.run_until_complete(asyncio.wait(pending, timeout=EXIT_SECONDS))


def _freeze_what_start_up_built() -> None:
    """Collect start-up's garbage, then leave every object that exists now (Django, the apps,
    Twisted: several hundred thousand that live as long as the process) out of the garbage
    collector's later passes (`gc.freeze`). A full collection walks every object, and a busy
    server gets one about every second: measured under 32 `/mcp` sessions reading, 255 ms of
    every second in collections of 110-200 ms each, with every call in flight waiting, and
    456-689 ms each while 1,000 devices are connected; most freed nothing
    (docs/PERFORMANCE.md, "Scale"). What is created later is collected as usual."""
    gc.collect()
    gc.freeze()


_freeze_what_start_up_built()
