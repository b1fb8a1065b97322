"""Seed 000's rooms: `seed_home` (devices.home, which may not import this app) announces
`home_seeded` in its transaction, and each seeded light is put in its room here."""

from __future__ import annotations

from typing import Any

from audit.models import Event
from automations import services


def rooms_for_seeded_lights(sender: Any, *, lights: list[tuple[str, str, str]], **kwargs: Any) -> None:
    services.seed_rooms(
        [(name, room) for name, _label, room in lights], actor="seed_home", interface=Event.Interface.SYSTEM
    )
