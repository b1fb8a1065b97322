"""The only code that changes the home.

Each write is one transaction that locks and updates the row and writes an `Event` (who,
through which interface, before and after); once committed, the change is broadcast to the
channel layer's home group. The hot writes run their SQL directly (`devices.statements`).
Async callers use the `a*` variants: the same statements, run on the event loop when SQLite
grants its write lock at once (`devices.loop_writes`), else in Django's sync thread, so the
event loop never waits for the database.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from sqlite3 import Cursor
from typing import Any

from django.db import transaction
from django.db.models import Model
from django.utils import timezone

from devices import loop_writes, statements
from devices.broadcast import asend_home_event, broadcast_on_commit, deferred
from devices.errors import LightNotFound, PersonNotFound
from devices.models import Alarm, Event, Light, Person
from devices.storable import is_storable


def _audit(
    *,
    actor: str,
    interface: str,
    action: str,
    target: str,
    before: Any,
    after: Any,
    broadcast: dict[str, Any] | None,
    raw: Cursor | None = None,
    at: datetime | None = None,
) -> dict[str, Any] | None:
    """Insert one audit event (at `at`, by default now) in the current transaction; returns
    the broadcast to send once it commits (None without `broadcast`)."""
    row = statements.event_row(
        at=at or timezone.now(),
        actor=actor,
        interface=interface,
        action=action,
        target=target,
        before=before,
        after=after,
    )
    statements.insert_events([row], raw)
    if broadcast is None:
        return None
    return {
        "action": action,
        "target": target,
        "actor": row["actor"],
        "interface": interface,
        "at": row["at"].isoformat(),
        **broadcast,
    }


def record_event(
    *,
    actor: str,
    interface: str,
    action: str,
    target: str,
    before: Any = None,
    after: Any = None,
    broadcast: dict[str, Any] | None = None,
) -> None:
    """Write one audit event (in the caller's transaction, if any); with `broadcast`, also
    announce the change after commit."""
    event = _audit(
        actor=actor,
        interface=interface,
        action=action,
        target=target,
        before=before,
        after=after,
        broadcast=broadcast,
    )
    if event is not None:
        broadcast_on_commit(event)


# --- the home's writes ----------------------------------------------------------------------
# Each `_change_*` runs the statements of one write inside a transaction opened by its caller
# (Django's `atomic()` in the sync service, or `loop_writes`) and returns the written object
# and the broadcast to send once committed.

Change = tuple[Any, dict[str, Any]]


def _set_flag(
    model: type[Model], name: str, field: str, value: bool, raw: Cursor | None, now: datetime
) -> tuple[int, bool, tuple] | None:
    """Lock the row named `name`, set its `field`; (id, value before, other columns) or None."""
    if not is_storable(name):  # no row has such a name, and PostgreSQL refuses to look
        return None
    row = statements.select_for_update(model, "name", name, ("id", field, *_SHOWN[model]), raw)
    if row is None:
        return None
    statements.update(model, row[0], {field: value, "updated_at": now}, raw)
    return row[0], bool(row[1]), row[2:]


# Columns besides id and the flag that the returned instances carry.
_SHOWN: dict[type[Model], tuple[str, ...]] = {Light: ("label", "room"), Person: ()}


def _change_light(name: str, on: bool, *, actor: str, interface: str, raw: Cursor | None = None) -> Change:
    now = timezone.now()  # the row's updated_at and its event's moment
    found = _set_flag(Light, name, "on", on, raw, now)
    if found is None:
        raise LightNotFound(name)
    pk, before, (label, room) = found
    event = _audit(
        actor=actor,
        interface=interface,
        action="light.set",
        target=f"light:{name}",
        before={"on": before},
        after={"on": on},
        broadcast={"kind": "light", "name": name, "on": on},
        raw=raw,
        at=now,
    )
    return Light(id=pk, name=name, label=label, room=room, on=on), event


def _change_alarm(armed: bool, *, actor: str, interface: str, raw: Cursor | None = None) -> Change:
    row = statements.select_for_update(Alarm, "id", Alarm.SINGLETON_PK, ("armed",), raw)
    if row is None:  # first use: create the row the ORM way
        if raw is not None:
            raise loop_writes.Unsupported("the alarm row does not exist yet")
        alarm, _ = Alarm.objects.select_for_update().get_or_create(pk=Alarm.SINGLETON_PK)
        row = (alarm.armed,)
    now = timezone.now()
    statements.update(Alarm, Alarm.SINGLETON_PK, {"armed": armed, "updated_at": now}, raw)
    event = _audit(
        actor=actor,
        interface=interface,
        action="alarm.set",
        target="alarm",
        before={"armed": bool(row[0])},
        after={"armed": armed},
        broadcast={"kind": "alarm", "armed": armed},
        raw=raw,
        at=now,
    )
    return Alarm(id=Alarm.SINGLETON_PK, armed=armed), event


def _change_person(
    name: str, present: bool, *, actor: str, interface: str, raw: Cursor | None = None
) -> Change:
    now = timezone.now()
    found = _set_flag(Person, name, "present", present, raw, now)
    if found is None:
        raise PersonNotFound(name)
    pk, before, _ = found
    event = _audit(
        actor=actor,
        interface=interface,
        action="person.set",
        target=f"person:{name}",
        before={"present": before},
        after={"present": present},
        broadcast={"kind": "person", "name": name, "present": present},
        raw=raw,
        at=now,
    )
    return Person(id=pk, name=name, present=present), event


def _write(change: Callable[..., Change], *args: Any, actor: str, interface: str) -> Any:
    with transaction.atomic():
        written, event = change(*args, actor=actor, interface=interface)
        broadcast_on_commit(event)
    return written


def set_light_state(name: str, on: bool, *, actor: str, interface: str) -> Light:
    return _write(_change_light, name, bool(on), actor=actor, interface=interface)


def set_alarm_state(armed: bool, *, actor: str, interface: str) -> Alarm:
    return _write(_change_alarm, bool(armed), actor=actor, interface=interface)


def set_person_presence(name: str, present: bool, *, actor: str, interface: str) -> Person:
    return _write(_change_person, name, bool(present), actor=actor, interface=interface)


_awrite_in_db_thread = deferred(_write)


async def _awrite(change: Callable[..., Change], *args: Any, actor: str, interface: str) -> Any:
    """The async twin of `_write`: on the loop when SQLite lets it (`loop_writes`), else in
    Django's database thread; either way the broadcast is sent from the loop after commit."""
    done = await loop_writes.write(change, *args, actor=actor, interface=interface)
    if done is loop_writes.UNAVAILABLE:
        return await _awrite_in_db_thread(change, *args, actor=actor, interface=interface)
    written, event = done  # type: ignore[misc]
    await asend_home_event(event)
    return written


async def aset_light_state(name: str, on: bool, *, actor: str, interface: str) -> Light:
    return await _awrite(_change_light, name, bool(on), actor=actor, interface=interface)


async def aset_alarm_state(armed: bool, *, actor: str, interface: str) -> Alarm:
    return await _awrite(_change_alarm, bool(armed), actor=actor, interface=interface)


async def aset_person_presence(name: str, present: bool, *, actor: str, interface: str) -> Person:
    return await _awrite(_change_person, name, bool(present), actor=actor, interface=interface)


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
