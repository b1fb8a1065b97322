"""`/healthz`: can this process serve HTTP (for load balancers), and `/healthz?full=1`: is
every dependency up (for monitoring)?

Both run every check and report each in the body; they differ in what makes them answer 503.
`/healthz` needs what serving a request needs, the database and the channel layer: a broker
outage leaves the web tier in rotation (the body says `"status": "degraded"` and names
`mqtt`). `/healthz?full=1` also needs MQTT (unless `HEALTHZ_CHECK_MQTT=0`, a hub without it):
a running worker linked to the broker, every subscription delivering. Each check answers a
small dict with `ok`; failures name only the kind of error (never a URL, host or message that
could carry a secret). Cheap enough to be probed every few seconds: one query, one
channel-layer round trip and one read of the MQTT workers' reports."""

from __future__ import annotations

import asyncio
import secrets
from typing import Any

from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings
from django.db import connection

from common.replies import answer, replies
from devices.mqtt import status

TIMEOUT_SECONDS = 3.0


def _database() -> dict[str, Any]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return {"ok": True, "vendor": connection.vendor}


def _mqtt() -> dict[str, Any]:
    return status.health()


async def _channel_layer() -> dict[str, Any]:
    """A message sent to this process's channel for answers and received back: through Redis
    when REDIS_URL is set, so a Redis that is down or full fails here."""
    layer = get_channel_layer()
    if layer is None:  # CHANNEL_LAYERS without a default
        return {"ok": False, "error": "not configured"}
    nonce = secrets.token_hex(8)

    async def ping(address: dict[str, str]) -> None:
        await answer(layer, address, {"type": "healthz.ping", "nonce": nonce})

    message = await replies.ask(ping, TIMEOUT_SECONDS)
    return {"ok": message.get("nonce") == nonce, "backend": type(layer).__name__}


async def _guarded(check) -> dict[str, Any]:
    try:
        return await asyncio.wait_for(check(), TIMEOUT_SECONDS)
    except TimeoutError:
        return {"ok": False, "error": "timeout"}
    except Exception as exc:  # any failure is the answer, not a crash of the probe
        return {"ok": False, "error": type(exc).__name__}


SERVING = ("database", "channel_layer")  # what answering a request needs


async def report(*, full: bool = False) -> dict[str, Any]:
    """Every configured check. `down` names the failing ones this view requires (the answer
    is 503 when it is not empty), `degraded` the other failing ones."""
    checks = {
        "database": _guarded(sync_to_async(_database)),
        "channel_layer": _guarded(_channel_layer),
    }
    if settings.HEALTHZ_CHECK_MQTT:
        checks["mqtt"] = _guarded(sync_to_async(_mqtt))
    results = dict(zip(checks, await asyncio.gather(*checks.values()), strict=True))
    failing = [name for name, result in results.items() if not result["ok"]]
    down = [name for name in failing if full or name in SERVING]
    degraded = [name for name in failing if name not in down]
    state = "down" if down else "degraded" if degraded else "ok"
    return {"status": state, "down": down, "degraded": degraded, "checks": results}
