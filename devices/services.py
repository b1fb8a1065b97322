"""The only code that changes the home.

Each write is one transaction that locks and updates the row and writes an `Event` (who,
through which interface, before and after); once committed, the change is broadcast to the
channel layer's home group. The hot writes run their SQL directly (`devices.statements`).
Async callers use the `a*` variants, which run the same function in Django's sync thread
so the event loop is never blocked.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import Model
from django.utils import timezone

from devices import statements
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
    """Write one audit event (in the caller's transaction, if any); with `broadcast`, also
    announce the change after commit. Returns the event as written (without its id)."""
    row = statements.event_row(
        at=timezone.now(),
        actor=actor,
        interface=interface,
        action=action,
        target=target,
        before=before,
        after=after,
    )
    statements.insert_events([row])
    if broadcast is not None:
        broadcast_on_commit(
            {
                "action": action,
                "target": target,
                "actor": row["actor"],
                "interface": interface,
                "at": row["at"].isoformat(),
                **broadcast,
            }
        )
    return Event(**row)


def _set_flag(model: type[Model], name: str, field: str, value: bool) -> tuple[int, bool, tuple] | None:
    """Lock the row named `name`, set its `field`; (id, value before, other columns) or None."""
    row = statements.select_for_update(model, "name", name, ("id", field, *_SHOWN[model]))
    if row is None:
        return None
    statements.update(model, row[0], {field: value, "updated_at": timezone.now()})
    return row[0], bool(row[1]), row[2:]


# Columns besides id and the flag that the returned instances carry.
_SHOWN: dict[type[Model], tuple[str, ...]] = {Light: ("label", "room"), Person: ()}


def set_light_state(name: str, on: bool, *, actor: str, interface: str) -> Light:
    on = bool(on)
    with transaction.atomic():
        found = _set_flag(Light, name, "on", on)
        if found is None:
            raise LightNotFound(name)
        pk, before, (label, room) = found
        record_event(
            actor=actor,
            interface=interface,
            action="light.set",
            target=f"light:{name}",
            before={"on": before},
            after={"on": on},
            broadcast={"kind": "light", "name": name, "on": on},
        )
    return Light(id=pk, name=name, label=label, room=room, on=on)


def set_alarm_state(armed: bool, *, actor: str, interface: str) -> Alarm:
    armed = bool(armed)
    with transaction.atomic():
        row = statements.select_for_update(Alarm, "id", Alarm.SINGLETON_PK, ("armed",))
        if row is None:  # first use: create the row the ORM way
            alarm, _ = Alarm.objects.select_for_update().get_or_create(pk=Alarm.SINGLETON_PK)
            row = (alarm.armed,)
        statements.update(Alarm, Alarm.SINGLETON_PK, {"armed": armed, "updated_at": timezone.now()})
        record_event(
            actor=actor,
            interface=interface,
            action="alarm.set",
            target="alarm",
            before={"armed": bool(row[0])},
            after={"armed": armed},
            broadcast={"kind": "alarm", "armed": armed},
        )
    return Alarm(id=Alarm.SINGLETON_PK, armed=armed)


def set_person_presence(name: str, present: bool, *, actor: str, interface: str) -> Person:
    present = bool(present)
    with transaction.atomic():
        found = _set_flag(Person, name, "present", present)
        if found is None:
            raise PersonNotFound(name)
        pk, before, _ = found
        record_event(
            actor=actor,
            interface=interface,
            action="person.set",
            target=f"person:{name}",
            before={"present": before},
            after={"present": present},
            broadcast={"kind": "person", "name": name, "present": present},
        )
    return Person(id=pk, name=name, present=present)


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
