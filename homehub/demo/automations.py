"""The demo's automations: ordinary automations, saved through `automations.authoring` and
enabled by the home's first owner, which the owner may then edit, disable or delete. One already
there is left as the owner left it (a second start keeps their edits). The sunset one needs the
home's location (`make demo` sets HOMEHUB_LOCATION when it is unset); without it, it is skipped
and the banner says why."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import Q

from audit.models import Event
from automations import schedules
from automations.authoring import save_automation
from automations.models import Automation
from common import roles
from devices.home.seed import LIGHTS

ACTOR = "demo"
ZONES = ("living_room", "kitchen", "office", "bedroom")  # the demo rooms' sensor zones


def _lights(on: bool) -> list[dict[str, Any]]:
    return [{"tool": "set_light_state", "arguments": {"name": name, "on": on}} for name, _, _ in LIGHTS]


INTRUDER: dict[str, Any] = {
    "name": "Intruder while armed",
    "description": "Someone moves in the living room while the alarm is armed: an alarm "
    "notification and every light on.",
    "triggers": [{"type": "sensor", "zone": "living_room", "channel": "presence", "above": 0.5}],
    "conditions": [{"type": "alarm", "armed": True}],
    "actions": [
        {
            "notify": "Movement in the living room while the alarm is armed.",
            "title": "Intruder?",
            "level": "alarm",
        },
        *_lights(True),
    ],
}
LAST_ONE_OUT: dict[str, Any] = {
    "name": "Last one out",
    "description": "When everyone is away: arm the alarm and switch every light off.",
    "triggers": [{"type": "presence", "who": "everyone", "to": "away"}],
    "actions": [{"tool": "set_alarm_state", "arguments": {"armed": True}}, *_lights(False)],
}
STUFFY_AIR: dict[str, Any] = {
    "name": "Stuffy air",
    "description": "CO2 above 1000 ppm for five minutes in a room: time to open a window.",
    "triggers": [
        {"type": "sensor", "zone": zone, "channel": "co2", "above": 1000, "for_seconds": 300}
        for zone in ZONES
    ],
    "actions": [
        {"notify": "CO2 has been above 1000 ppm for five minutes: open a window.", "title": "Stuffy air"}
    ],
}
SUNSET_LIGHTS: dict[str, Any] = {
    "name": "Sunset lights",
    "description": "At sunset, the salon's light on.",
    "triggers": [{"type": "sun", "event": "sunset"}],
    "actions": [{"tool": "set_light_state", "arguments": {"name": "salon", "on": True}}],
}
DEMO_AUTOMATIONS = [INTRUDER, LAST_ONE_OUT, STUFFY_AIR, SUNSET_LIGHTS]


@dataclass
class Seeded:
    """What the demo's automations are now: the names there (new or kept), those skipped with
    why, and the owner who enabled the new ones (None: no owner yet, saved disabled)."""

    names: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    owner: str | None = None


def first_owner() -> Any:
    """The home's first owner: the first superuser, else the first account in the owner role."""
    return (
        get_user_model()
        .objects.filter(Q(is_superuser=True) | Q(groups__name=roles.OWNER), is_active=True)
        .order_by("-is_superuser", "pk")
        .first()
    )


def seed_automations() -> Seeded:
    """Save each demo automation not there yet (enabled by the first owner); keep the others."""
    owner = first_owner()
    seeded = Seeded(owner=owner.get_username() if owner is not None else None)
    for definition in DEMO_AUTOMATIONS:
        name = str(definition["name"])
        if Automation.objects.filter(name=name).exists():
            seeded.names.append(name)
            continue
        if any(t["type"] == "sun" for t in definition["triggers"]):
            try:
                schedules.location()
            except schedules.ScheduleError as exc:
                seeded.skipped.append(f"{name}: {exc}")
                continue
        save_automation(
            definition, actor=ACTOR, interface=Event.Interface.SYSTEM, user=owner, enable=owner is not None
        )
        seeded.names.append(name)
    return seeded
