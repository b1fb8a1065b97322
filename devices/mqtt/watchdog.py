"""The worker's liveness for systemd (`Type=notify`, `WatchdogSec=` in
deploy/systemd/mqtt-worker@.service): `READY=1` once started, then `WATCHDOG=1` every half
watchdog interval while the worker is alive (its event loop turns, since this runs on it, and
its ingestion writer thread runs). A broker or database outage is no reason to restart it (it
retries by itself), so they do not stop the pings: readiness is `manage.py mqtt_health`'s
question, not this one. The protocol is sd_notify(3): one datagram on $NOTIFY_SOCKET."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import Callable

logger = logging.getLogger(__name__)


def notify(state: str) -> bool:
    """Tell systemd `state`; False when not run by systemd with a notification socket."""
    address = os.environ.get("NOTIFY_SOCKET", "")
    if not address:
        return False
    if address.startswith("@"):
        address = "\0" + address[1:]  # an abstract socket
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            sock.connect(address)
            sock.sendall(state.encode())
    except OSError:
        logger.warning("could not notify systemd (%s)", state.split("=", 1)[0], exc_info=True)
        return False
    return True


async def keep_alive(alive: Callable[[], bool]) -> None:
    """Say READY=1, then WATCHDOG=1 twice per $WATCHDOG_USEC while `alive()` holds."""
    notify("READY=1")
    interval = int(os.environ.get("WATCHDOG_USEC", "0")) / 2e6
    if interval <= 0:
        return
    while True:
        await asyncio.sleep(interval)
        if alive():
            notify("WATCHDOG=1")
        else:
            logger.error("mqtt worker: not alive any more; systemd's watchdog will restart it")
