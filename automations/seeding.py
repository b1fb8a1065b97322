"""Seed 000's rooms: `seed_home` (devices.home, which may not import this app) announces
`home_seeded` in its transaction, and each seeded light is put in its room here."""

from __future__ import annotations

from typing import Any

from audit.models import Event
from automations import services
from automations.models import RoomLight


def rooms_for_seeded_lights(sender: Any, *, lights: list[tuple[str, str, str]], **kwargs: Any) -> None:
    """Each seeded light that is in no room yet goes to its seed room (the owner's later moves
    are kept)."""
    placed = set(
        RoomLight.objects.filter(light__name__in=[n for n, _, _ in lights]).values_list(
            "light__name", flat=True
        )
    )
    by_room: dict[str, list[str]] = {}
    for name, _label, room in lights:
        if room and name not in placed:
            by_room.setdefault(room, []).append(name)
    for ordering, (room, names) in enumerate(by_room.items()):
        services.room_for_lights(
            room, names, actor="seed_home", interface=Event.Interface.SYSTEM, ordering=ordering
        )
