"""The only code that changes the home.

Each write is one `transaction.atomic()` that locks and changes the row through the ORM,
writes its audit `Event` (who, through which door, before and after) and announces the
change, which every hub process hears once the transaction commits (`audit.changes`).
This process's copy of the home's state is dropped as the transaction commits, before the
write returns (`devices.home.state`). Async callers use the `a*` names: the same service in
Django's database thread, where writes made at the same time share one hop and one commit
(`common.write_batches`).
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from audit.models import Event
from audit.services import record_event
from common.storable import is_storable
from common.write_batches import batched
from devices.home import state
from devices.home.errors import LightNotFound, PersonNotFound
from devices.home.models import Alarm, Light, Person
from devices.home.seed import LIGHTS, PEOPLE
from devices.home.signals import home_seeded


def _switch(
    model: type[Light | Alarm | Person], key: dict[str, Any], field: str, value: bool, **who: str
) -> bool:
    """Set `field` of the row matching `key` to `value`, with its audit event and announcement;
    False when no row matches. One UPDATE where the value differs (the usual case), which also
    tells what it was before, whatever other writers do meanwhile; only an UPDATE that changed
    nothing is followed by a query telling a row already so from a missing one."""
    if model.objects.filter(**key, **{field: not value}).update(
        **{field: value, "updated_at": timezone.now()}
    ):
        before = not value
    elif model.objects.filter(**key).exists():
        before = value
    else:
        return False
    kind = model.__name__.lower()  # light, alarm, person
    name = key.get("name")
    transaction.on_commit(state.forget)
    record_event(
        action=f"{kind}.set",
        target=f"{kind}:{name}" if name else kind,
        before={field: before},
        after={field: value},
        broadcast={"kind": kind, **({"name": name} if name else {}), field: value},
        **who,
    )
    return True


def _switch_named(model: type[Light | Person], name: str, field: str, value: bool, **who: str) -> None:
    """`_switch` the named light or person in a transaction of its own; HomeError if unknown."""
    with transaction.atomic():
        # No row has a name no database can store (PostgreSQL refuses to even look).
        if not (is_storable(name) and _switch(model, {"name": name}, field, bool(value), **who)):
            raise LightNotFound(name) if model is Light else PersonNotFound(name)


def set_light_state(name: str, on: bool, *, actor: str, interface: str) -> None:
    _switch_named(Light, name, "on", on, actor=actor, interface=interface)


def set_alarm_state(armed: bool, *, actor: str, interface: str) -> None:
    with transaction.atomic():
        key: dict[str, Any] = {"pk": Alarm.SINGLETON_PK}
        if not _switch(Alarm, key, "armed", bool(armed), actor=actor, interface=interface):
            Alarm.objects.get_or_create(**key)  # first use
            _switch(Alarm, key, "armed", bool(armed), actor=actor, interface=interface)


def set_person_presence(name: str, present: bool, *, actor: str, interface: str) -> None:
    _switch_named(Person, name, "present", present, actor=actor, interface=interface)


aset_light_state = batched(set_light_state)
aset_alarm_state = batched(set_alarm_state)


def seed_home(*, reset: bool = False) -> dict[str, int]:
    """Create seed 000's home where missing; with `reset`, also put it back to its start state
    (each light, person and the alarm it switches is audited as any other change).

    Returns how many rows were created. Running it twice changes nothing the second time.
    """
    system = {"actor": "seed_home", "interface": Event.Interface.SYSTEM}
    created = {"lights": 0, "people": 0, "alarm": 0}
    with transaction.atomic():
        for name, label, room in LIGHTS:
            light, new = Light.objects.select_for_update().get_or_create(
                name=name, defaults={"label": label, "room": room, "on": False}
            )
            created["lights"] += new
            if reset and light.on:
                _switch(Light, {"name": name}, "on", False, **system)
        for name in PEOPLE:
            person, new = Person.objects.select_for_update().get_or_create(
                name=name, defaults={"present": False}
            )
            created["people"] += new
            if reset and person.present:
                _switch(Person, {"name": name}, "present", False, **system)
        alarm, new = Alarm.objects.select_for_update().get_or_create(
            pk=Alarm.SINGLETON_PK, defaults={"armed": False}
        )
        created["alarm"] += new
        if reset and alarm.armed:
            _switch(Alarm, {"pk": Alarm.SINGLETON_PK}, "armed", False, **system)
        home_seeded.send(sender=seed_home, lights=LIGHTS)
        if reset or any(created.values()):
            transaction.on_commit(state.forget)
            record_event(
                action="home.seed",
                target="home",
                after={"created": created, "reset": reset},
                broadcast={"kind": "home"},
                **system,
            )
    return created
