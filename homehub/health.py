"""`/healthz`: is this hub process able to do its job? Each check answers a small dict with
`ok`; failures name only the kind of error (never a URL, host or message that could carry a
secret). Cheap enough to be probed every few seconds: one query, one channel-layer round trip
and one read of the MQTT workers' reports."""

from __future__ import annotations

import asyncio
import secrets
from typing import Any

from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings
from django.db import connection

from devices.mqtt import status

TIMEOUT_SECONDS = 3.0


def _database() -> dict[str, Any]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return {"ok": True, "vendor": connection.vendor}


def _mqtt() -> dict[str, Any]:
    state = status.broker_state()
    return {"ok": state == "connected", "state": state}


async def _channel_layer() -> dict[str, Any]:
    """A message sent to a fresh channel of this process and received back: through Redis
    when REDIS_URL is set, so a Redis that is down or full fails here."""
    layer = get_channel_layer()
    # The default prefix: channels-redis reads a process's channels through one receiver,
    # which only serves channels that share it (the gateway's among them).
    channel = await layer.new_channel()
    nonce = secrets.token_hex(8)
    await layer.send(channel, {"type": "healthz.ping", "nonce": nonce})
    message = await layer.receive(channel)
    return {"ok": message.get("nonce") == nonce, "backend": type(layer).__name__}


async def _guarded(check) -> dict[str, Any]:
    try:
        return await asyncio.wait_for(check(), TIMEOUT_SECONDS)
    except TimeoutError:
        return {"ok": False, "error": "timeout"}
    except Exception as exc:  # any failure is the answer, not a crash of the probe
        return {"ok": False, "error": type(exc).__name__}


async def report() -> dict[str, Any]:
    """Every configured check; `down` names the failing ones (empty: healthy)."""
    checks = {
        "database": _guarded(sync_to_async(_database)),
        "channel_layer": _guarded(_channel_layer),
    }
    if settings.HEALTHZ_CHECK_MQTT:
        checks["mqtt"] = _guarded(sync_to_async(_mqtt))
    results = dict(zip(checks, await asyncio.gather(*checks.values()), strict=True))
    down = [name for name, result in results.items() if not result["ok"]]
    return {"status": "down" if down else "ok", "down": down, "checks": results}
