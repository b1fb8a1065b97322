"""Telemetry as sensors publish it (seed 004): what a topic and a payload mean, or why not.

Topic `office/{zone}/{device_type}/{device_id}/{channel}`; payload `{"value": 24.5, "unit": "c",
"timestamp": 1715840000}` or a bare number. `value` 0 is a value; the timestamp may be in
seconds or milliseconds, or absent (then the time of receipt counts). The channel `heartbeat`
says the device is alive and carries no reading. Pure functions: no database, no broker.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import UTC, datetime

from common.storable import is_storable, storable_text

TOPIC_ROOT = "office"
HEARTBEAT = "heartbeat"
MAX_SEGMENT = 64  # the columns' width
MAX_UNIT = 16
MAX_PAYLOAD_BYTES = 4096  # a reading is a few dozen bytes; more is not a reading
# Seconds since the epoch beyond this are milliseconds (1e11 s is the year 5138).
MILLISECONDS_FROM = 1e11
EARLIEST = datetime(2000, 1, 1, tzinfo=UTC).timestamp()
FUTURE_SLACK_SECONDS = 86400.0  # clocks run fast; a day ahead is not a typo any more


class Rejected(ValueError):
    """The message is not a reading; the text says why, for the rejected-messages table."""


@dataclass(frozen=True, slots=True)
class Reading:
    zone: str
    device_type: str
    device_id: str
    channel: str
    value: float
    unit: str
    measured_at: float  # seconds since the epoch

    @property
    def sensor(self) -> tuple[str, str, str, str]:
        return (self.zone, self.device_type, self.device_id, self.channel)


@dataclass(frozen=True, slots=True)
class Heartbeat:
    device_id: str


def parse_topic(topic: str) -> tuple[str, str, str, str]:
    parts = topic.split("/")
    if len(parts) != 5 or parts[0] != TOPIC_ROOT:
        raise Rejected("topic is not office/{zone}/{device_type}/{device_id}/{channel}")
    fields = parts[1:]
    for part in fields:
        if not part:
            raise Rejected("topic has an empty level")
        if len(part) > MAX_SEGMENT:
            raise Rejected(f"topic level longer than {MAX_SEGMENT} characters")
        if not is_storable(part):
            raise Rejected("topic level has characters that cannot be stored (NUL or a lone surrogate)")
    return fields[0], fields[1], fields[2], fields[3]


def _number(value: object, what: str) -> float:
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if not isinstance(value, int | float):
        raise Rejected(f"{what} is not a number")
    try:
        number = float(value)
    except OverflowError:  # an integer of hundreds of digits
        raise Rejected(f"{what} is out of range") from None
    if not math.isfinite(number):
        raise Rejected(f"{what} is not finite")
    return number


def _timestamp(raw: object, received: float) -> float:
    if raw is None:
        return received
    seconds = _number(raw, "timestamp")
    if seconds >= MILLISECONDS_FROM:
        seconds /= 1000.0
    if not EARLIEST <= seconds <= received + FUTURE_SLACK_SECONDS:
        raise Rejected("timestamp out of range (before 2000 or more than a day ahead)")
    return seconds


def parse(topic: str, payload: bytes, received: float) -> Reading | Heartbeat:
    """The reading (or heartbeat) carried by one message; raises `Rejected` otherwise."""
    zone, device_type, device_id, channel = parse_topic(topic)
    if channel == HEARTBEAT:
        return Heartbeat(device_id)
    if len(payload) > MAX_PAYLOAD_BYTES:
        raise Rejected(f"payload larger than {MAX_PAYLOAD_BYTES} bytes")
    try:
        body = json.loads(payload)  # NaN and Infinity are read, and refused as not finite
    except (ValueError, RecursionError):  # RecursionError: nested too deeply
        raise Rejected("payload is not JSON") from None
    if isinstance(body, dict):
        if "value" not in body:
            raise Rejected("payload has no 'value'")
        value = _number(body["value"], "value")
        unit = body.get("unit")
        if unit is None:
            unit = ""
        elif not isinstance(unit, str):
            raise Rejected("unit is not a string")
        elif len(unit) > MAX_UNIT:
            raise Rejected(f"unit longer than {MAX_UNIT} characters")
        elif not is_storable(unit):
            raise Rejected("unit has characters that cannot be stored (NUL or a lone surrogate)")
        measured = _timestamp(body.get("timestamp"), received)
    else:
        value, unit, measured = _number(body, "payload"), "", received
    return Reading(zone, device_type, device_id, channel, value, unit, measured)


def describe(payload: bytes, limit: int = 1000) -> str:
    """A payload as text for people: decoded leniently, cut to `limit` characters."""
    text = storable_text(payload[: limit * 4].decode("utf-8", errors="replace"))
    return text if len(text) <= limit else text[:limit] + "…"
