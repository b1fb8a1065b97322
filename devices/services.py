"""The only code that changes the home.

Each write is one `transaction.atomic()` that locks and changes the row through the ORM,
writes its audit `Event` (who, through which door, before and after) and announces the
change, which every hub process hears once the transaction commits (`devices.broadcast`).
This process's copy of the home's state is dropped as the transaction commits, before the
write returns (`devices.home_state`). Async callers use the `a*` names: the same service in
Django's database thread, where writes made at the same time share one hop and one commit
(`common.write_batches`).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.db.models import Model
from django.utils import timezone

from common.pruning import delete_in_chunks
from common.write_batches import batched
from devices import agent_channels, home_state
from devices.broadcast import announce_change
from devices.errors import LightNotFound, PersonNotFound
from devices.models import Agent, Alarm, Event, Light, Person
from devices.storable import is_storable


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
    announce the change to every process once it commits."""
    event = Event.objects.create(
        actor=actor[:150], interface=interface, action=action, target=target, before=before, after=after
    )
    if broadcast is not None:
        if broadcast.get("kind") in home_state.HOME_KINDS:
            transaction.on_commit(home_state.forget)
        announce_change(
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


def prune_events(older_than: timedelta) -> int:
    """Delete audit events older than `older_than`, in short transactions; how many."""
    return delete_in_chunks(Event.objects.filter(at__lt=timezone.now() - older_than))


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
    kind = model._meta.model_name
    name = key.get("name")
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
        key = {"pk": Alarm.SINGLETON_PK}
        if not _switch(Alarm, key, "armed", bool(armed), actor=actor, interface=interface):
            Alarm.objects.get_or_create(**key)  # first use
            _switch(Alarm, key, "armed", bool(armed), actor=actor, interface=interface)


def set_person_presence(name: str, present: bool, *, actor: str, interface: str) -> None:
    _switch_named(Person, name, "present", present, actor=actor, interface=interface)


aset_light_state = batched(set_light_state)
aset_alarm_state = batched(set_alarm_state)
aset_person_presence = batched(set_person_presence)


def seed_home(*, reset: bool = False) -> dict[str, int]:
    """Create seed 000's home where missing; with `reset`, also put it back to its start state
    (each light, person and the alarm it switches is audited as any other change).

    Returns how many rows were created. Running it twice changes nothing the second time.
    """
    from devices.home_seed import LIGHTS, PEOPLE

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
        if reset or any(created.values()):
            record_event(
                action="home.seed",
                target="home",
                after={"created": created, "reset": reset},
                broadcast={"kind": "home"},
                **system,
            )
    return created


# --- the admin's forms: lights, people and agents added, edited and deleted ----------------------


def _audit_target(row: Model) -> tuple[str, dict[str, Any]]:
    """The audit target of a light, person or agent, and how its change is announced."""
    if isinstance(row, Agent):
        agent_channels.announce_agent_change_on_commit(row.agent_id)
        return f"agent:{row.agent_id}", {"kind": "agent", "agent_id": row.agent_id}
    return f"{row._meta.model_name}:{row.name}", {"kind": "home"}


def save_row(
    row: Light | Person | Agent, *, fields: Iterable[str], initial: dict[str, Any], created: bool, actor: str
) -> None:
    """Save a light, person or agent as the admin's form left it, audited as `<kind>.create` or
    `<kind>.edit` with the `fields` the form changed (`initial`: the form's values before)."""
    fields = list(fields)
    with transaction.atomic():
        row.save()
        target, broadcast = _audit_target(row)
        record_event(
            actor=actor,
            interface=Event.Interface.ADMIN,
            action=f"{row._meta.model_name}.{'create' if created else 'edit'}",
            target=target,
            before=None if created else {field: initial.get(field) for field in fields},
            after={field: getattr(row, field) for field in fields},
            broadcast=broadcast,
        )


def delete_rows(rows: Iterable[Light | Person | Agent], *, actor: str) -> int:
    """Delete lights, people or agents, each audited as `<kind>.delete`."""
    deleted = 0
    with transaction.atomic():
        for row in rows:
            target, broadcast = _audit_target(row)
            row.delete()
            record_event(
                actor=actor,
                interface=Event.Interface.ADMIN,
                action=f"{row._meta.model_name}.delete",
                target=target,
                broadcast=broadcast,
            )
            deleted += 1
    return deleted
