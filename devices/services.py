"""The only code that changes the home.

Each write is one transaction that updates the row and writes an `Event` (who, through
which interface, before and after); once committed, the change is broadcast to the
channel layer's home group. Async callers use the `a*` variants, which run the same
function in Django's sync thread so the event loop is never blocked.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from devices.broadcast import broadcast_on_commit, deferred
from devices.errors import LightNotFound, PersonNotFound
from devices.models import Alarm, Event, Light, Person


def record_event(
    *,
    actor: str,
    interface: str,
    action: str,
    target: str,
    before: Any = None,
    after: Any = None,
    broadcast: dict[str, Any] | None = None,
) -> Event:
    """Write one audit event; with `broadcast`, also announce the change after commit."""
    event = Event.objects.create(
        actor=actor[:150],
        interface=interface,
        action=action,
        target=target,
        before=before,
        after=after,
    )
    if broadcast is not None:
        broadcast_on_commit(
            {
                "action": action,
                "target": target,
                "actor": event.actor,
                "interface": interface,
                "at": event.at.isoformat(),
                **broadcast,
            }
        )
    return event


def set_light_state(name: str, on: bool, *, actor: str, interface: str) -> Light:
    with transaction.atomic():
        light = Light.objects.select_for_update().filter(name=name).first()
        if light is None:
            raise LightNotFound(name)
        before = {"on": light.on}
        light.on = bool(on)
        light.save(update_fields=["on", "updated_at"])
        record_event(
            actor=actor,
            interface=interface,
            action="light.set",
            target=f"light:{name}",
            before=before,
            after={"on": light.on},
            broadcast={"kind": "light", "name": name, "on": light.on},
        )
    return light


def set_alarm_state(armed: bool, *, actor: str, interface: str) -> Alarm:
    with transaction.atomic():
        alarm, _ = Alarm.objects.select_for_update().get_or_create(pk=Alarm.SINGLETON_PK)
        before = {"armed": alarm.armed}
        alarm.armed = bool(armed)
        alarm.save(update_fields=["armed", "updated_at"])
        record_event(
            actor=actor,
            interface=interface,
            action="alarm.set",
            target="alarm",
            before=before,
            after={"armed": alarm.armed},
            broadcast={"kind": "alarm", "armed": alarm.armed},
        )
    return alarm


def set_person_presence(name: str, present: bool, *, actor: str, interface: str) -> Person:
    with transaction.atomic():
        person = Person.objects.select_for_update().filter(name=name).first()
        if person is None:
            raise PersonNotFound(name)
        before = {"present": person.present}
        person.present = bool(present)
        person.save(update_fields=["present", "updated_at"])
        record_event(
            actor=actor,
            interface=interface,
            action="person.set",
            target=f"person:{name}",
            before=before,
            after={"present": person.present},
            broadcast={"kind": "person", "name": name, "present": person.present},
        )
    return person


aset_light_state = deferred(set_light_state)
aset_alarm_state = deferred(set_alarm_state)
aset_person_presence = deferred(set_person_presence)


def seed_home(*, reset: bool = False) -> dict[str, int]:
    """Create seed 000's home where missing; with `reset`, also put it back to its start state.

    Returns how many rows were created. Running it twice changes nothing the second time.
    """
    from devices.home_seed import LIGHTS, PEOPLE

    created = {"lights": 0, "people": 0, "alarm": 0}
    with transaction.atomic():
        for name, label, room in LIGHTS:
            light, new = Light.objects.get_or_create(
                name=name, defaults={"label": label, "room": room, "on": False}
            )
            created["lights"] += new
            if reset and light.on:
                light.on = False
                light.save(update_fields=["on", "updated_at"])
        for name in PEOPLE:
            person, new = Person.objects.get_or_create(name=name, defaults={"present": False})
            created["people"] += new
            if reset and person.present:
                person.present = False
                person.save(update_fields=["present", "updated_at"])
        alarm, new = Alarm.objects.get_or_create(pk=Alarm.SINGLETON_PK, defaults={"armed": False})
        created["alarm"] += new
        if reset and alarm.armed:
            alarm.armed = False
            alarm.save(update_fields=["armed", "updated_at"])
        if reset or any(created.values()):
            record_event(
                actor="seed_home",
                interface=Event.Interface.SYSTEM,
                action="home.seed",
                target="home",
                after={"created": created, "reset": reset},
                broadcast={"kind": "home"},
            )
    return created
