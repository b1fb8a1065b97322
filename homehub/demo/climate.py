"""A plausible indoor climate for the demo's rooms, as a function of time.

Values depend only on the room and the moment (plus a little sensor noise), so a week of
history written at start and the live readings that follow draw one continuous curve: a day
cycle in local time (coolest near 05:00, warmest mid-afternoon), slow drifts over hours and
days, people at home mostly in the evening and at night, CO2 that rises while they are in
the room, humidity that falls as the air warms.
"""

from __future__ import annotations

import hashlib
import math
import random
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo

SLOT_SECONDS = 600  # presence changes at most every ten minutes
HOUR = 3600.0
DAY = 86400.0


def _unit_random(*key: object) -> float:
    """A stable number in [0, 1) for `key`: the same slot of the same room is always the same."""
    digest = hashlib.blake2b(repr(key).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


@dataclass(frozen=True)
class Room:
    """One sensor board's room: `base` temperature, `swing` of its day cycle, `occupancy`
    (how often people are there when they are home)."""

    device_id: str
    zone: str
    base: float = 21.5
    swing: float = 1.8
    occupancy: float = 0.6

    def _drift(self, at: float, period: float, amplitude: float) -> float:
        phase = _unit_random(self.device_id, period) * 2 * math.pi
        return amplitude * math.sin(2 * math.pi * at / period + phase)

    def _day(self, at: float, tz: tzinfo) -> float:
        """-1 at 03:00 local time, 1 at 15:00."""
        local = datetime.fromtimestamp(at, tz)
        hours = local.hour + local.minute / 60
        return -math.cos(2 * math.pi * (hours - 3) / 24)

    def present(self, at: float, tz: tzinfo = UTC) -> bool:
        slot = int(at // SLOT_SECONDS)
        local = datetime.fromtimestamp(slot * SLOT_SECONDS, tz)
        working_hours = local.weekday() < 5 and 8 <= local.hour < 17
        home = 0.15 if working_hours else 0.9 if local.hour < 7 or local.hour >= 19 else 0.6
        return _unit_random(self.device_id, slot) < home * self.occupancy

    def _crowd(self, at: float, tz: tzinfo) -> float:
        """Share of the last hour someone was in the room (CO2 builds up and airs out slowly)."""
        slots = [self.present(at - k * SLOT_SECONDS, tz) for k in range(6)]
        return sum(slots) / len(slots)

    def value(self, channel: str, at: float, tz: tzinfo = UTC) -> float:
        noise = random.Random(f"{self.device_id}{channel}{at}")
        if channel == "temperature":
            value = (
                self.base
                + self.swing * self._day(at, tz)
                + self._drift(at, 5 * HOUR, 0.4)
                + self._drift(at, 3.5 * DAY, 0.9)
                + 0.6 * self._crowd(at, tz)
            )
            return round(value + noise.uniform(-0.1, 0.1), 2)
        if channel == "humidity":
            value = 47 - 5 * self._day(at, tz) + self._drift(at, 2.5 * DAY, 6) + 4 * self._crowd(at, tz)
            return round(min(max(value + noise.uniform(-0.8, 0.8), 20), 80), 1)
        if channel == "co2":
            value = 430 + 650 * self._crowd(at, tz) + self._drift(at, 7 * HOUR, 40)
            return float(round(value + noise.uniform(-12, 12)))
        if channel == "presence":
            return 1.0 if self.present(at, tz) else 0.0
        raise ValueError(f"no channel {channel}")
