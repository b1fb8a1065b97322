"""The worker's liveness for systemd (`Type=notify`, `WatchdogSec=` in
deploy/systemd/mqtt-worker@.service): `READY=1` once started, then `WATCHDOG=1` every half
watchdog interval while the worker is alive (its event loop turns, since this runs on it, and
its ingestion writer thread runs). A broker or database outage is no reason to restart it (it
retries by itself), so they do not stop the pings: readiness is `manage.py mqtt_health`'s
question, not this one. The protocol is sd_notify(3): one datagram on $NOTIFY_SOCKET.

The datagram is sent without waiting: a notification socket whose reader has fallen behind
(its queue holds `net.unix.max_dgram_qlen` datagrams, 10 by default) would otherwise block the
send, and with it the event loop this runs on, which then handles nothing (no discovery, not
even SIGTERM). A ping that finds the queue full is dropped with a warning; the next one follows."""

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
            sock.setblocking(False)
            sock.connect(address)
            sock.send(state.encode())
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
