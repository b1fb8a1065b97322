"""A refused subscription is an outage: every SUBACK is checked, and delivery is proven.

A broker may refuse a subscription in its SUBACK (reason code 0x80 and above). Mosquitto's
ACL file never does: it grants every subscription, then silently drops each message the ACL
denies the subscriber (measured on 2.0.11: bench/measure_mqtt_sessions.py). So the worker
also proves delivery: on every connection, and every `MQTT_PROBE_SECONDS`, it publishes a
probe (a fresh nonce) on its own probe topic in each topic tree it reads (`topics.probes`:
`office/`, `mcp/`, `homehub/`), subscribed beside its real subscriptions, and expects it back
within `MQTT_PROBE_TIMEOUT_SECONDS`. A subscription is then `ok`, `refused` (its SUBACK
said so), `silent` (its tree's probe did not come back: the ACL lets this user subscribe but
not read, or the probe was not allowed out) or `pending` (not known yet). Each change to a
bad state is logged with the topic and the reason; the worker reports the states with its
status (`/healthz?full=1`, `/metrics`, `manage.py mqtt_health`).

Called from paho's network thread (SUBACKs, probes coming back) and from the worker's event
loop (sending probes, reports): a lock keeps the states whole.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import paho.mqtt.client as mqtt

from common.mqtt import topics

logger = logging.getLogger(__name__)

QOS = 1


@dataclass(slots=True)
class Subscription:
    topic: str
    state: str = "pending"  # "ok", "refused", "silent" or "pending"
    reason: str = ""


class SubscriptionWatch:
    def __init__(
        self, client_id: str, filters: Sequence[str], *, username: str, probe_timeout: float
    ) -> None:
        self.client_id = client_id
        self.username = username or "(anonymous)"
        self.probe_timeout = probe_timeout
        self.probe_topics = topics.probes(client_id)  # tree -> topic
        self._subscriptions = {f: Subscription(f) for f in filters}
        self._lock = threading.Lock()
        self._by_mid: dict[int, list[str]] = {}
        self._pending: dict[str, tuple[str, float]] = {}  # tree -> (nonce, sent at)
        self._probe_refused: dict[str, str] = {}  # tree -> the SUBACK reason of its probe

    # --- paho's network thread ----------------------------------------------------------------

    def subscribe(self, client: mqtt.Client, filters: Sequence[str] | None = None) -> None:
        """Subscribe to `filters` (default: every real one, and the probes) and await the SUBACK."""
        wanted = list(filters) if filters is not None else [*self._subscriptions, *self.probe_topics.values()]
        with self._lock:
            for topic in wanted:
                if topic in self._subscriptions:
                    self._subscriptions[topic] = Subscription(topic)
            _, mid = client.subscribe([(topic, QOS) for topic in wanted])
            if mid is not None:  # None: not connected; the next connection subscribes again
                self._by_mid[mid] = wanted

    def on_suback(self, mid: int, reason_codes: Sequence[Any]) -> None:
        with self._lock:
            wanted = self._by_mid.pop(mid, [])
            for topic, code in zip(wanted, reason_codes, strict=False):
                refused = code.is_failure
                if topic in self._subscriptions:
                    if refused:
                        self._set(topic, "refused", f"the broker refused it: {code} (0x{code.value:02x})")
                    continue
                tree = topics.tree(topic)  # a probe topic
                if refused:
                    self._probe_refused[tree] = f"{code} (0x{code.value:02x})"
                else:
                    self._probe_refused.pop(tree, None)

    def send_probes(self, client: mqtt.Client) -> None:
        now = time.monotonic()
        with self._lock:
            for tree, topic in self.probe_topics.items():
                nonce = secrets.token_hex(8)
                self._pending[tree] = (nonce, now)
                client.publish(topic, nonce, qos=QOS)

    def on_probe(self, topic: str, payload: bytes) -> bool:
        """A probe came back; False if it is not one of this worker's."""
        tree = next((t for t, probe in self.probe_topics.items() if probe == topic), None)
        if tree is None:
            return False
        with self._lock:
            pending = self._pending.get(tree)
            if pending is not None and payload.decode(errors="replace") == pending[0]:
                del self._pending[tree]
                for sub in self._in_tree(tree):
                    if sub.state != "refused":
                        self._set(sub.topic, "ok", "")
        return True

    # --- the worker's event loop ----------------------------------------------------------------

    def check_overdue(self) -> None:
        """Subscriptions whose tree's probe is late become `silent`."""
        now = time.monotonic()
        with self._lock:
            for tree, (_, sent) in list(self._pending.items()):
                if now - sent < self.probe_timeout:
                    continue
                probe = self.probe_topics[tree]
                if tree in self._probe_refused:
                    why = f"its probe subscription {probe} was refused: {self._probe_refused[tree]}"
                else:
                    why = (
                        f"the probe published on {probe} did not come back within {self.probe_timeout:g} s "
                        f"(does the broker's ACL let user {self.username!r} read and write it?)"
                    )
                for sub in self._in_tree(tree):
                    if sub.state != "refused":
                        self._set(sub.topic, "silent", f"nothing arrives: {why}")

    def refused(self) -> list[str]:
        with self._lock:
            return [s.topic for s in self._subscriptions.values() if s.state == "refused"]

    def report(self) -> list[dict[str, str]]:
        with self._lock:
            return [asdict(s) for s in self._subscriptions.values()]

    def reset(self) -> None:
        """The connection is gone: nothing is known until the next SUBACK and probe."""
        with self._lock:
            self._pending.clear()
            for topic in self._subscriptions:
                self._subscriptions[topic] = Subscription(topic)

    # --- inside the lock --------------------------------------------------------------------------

    def _in_tree(self, tree: str) -> list[Subscription]:
        return [s for s in self._subscriptions.values() if topics.tree(s.topic) == tree]

    def _set(self, topic: str, state: str, reason: str) -> None:
        before = self._subscriptions[topic].state
        self._subscriptions[topic] = Subscription(topic, state, reason)
        if state in {"refused", "silent"} and before != state:
            logger.error("mqtt worker %s: subscription %s is %s: %s", self.client_id, topic, state, reason)
        elif state == "ok" and before in {"refused", "silent"}:
            logger.warning("mqtt worker %s: subscription %s delivers again", self.client_id, topic)
