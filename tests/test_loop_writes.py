"""Home writes run on the event loop (SQLite, lock free at once) write exactly what the
database thread would, audit in the same transaction, and step aside when the lock is taken."""

import sqlite3
from datetime import timedelta

import pytest
from asgiref.sync import async_to_sync
from django.db import connection
from django.utils import timezone

from devices import loop_writes, services
from devices.errors import LightNotFound
from devices.models import Alarm, Event, Light

pytestmark = pytest.mark.skipif(connection.vendor != "sqlite", reason="loop writes are for SQLite only")


@pytest.fixture
def no_db_thread(monkeypatch):
    async def refuse(*args, **kwargs):
        raise AssertionError("the write went to the database thread")

    monkeypatch.setattr(services, "_awrite_in_db_thread", refuse)


def test_a_loop_write_stores_and_audits_what_the_orm_would(transactional_db, no_db_thread):
    services.seed_home()
    started = timezone.now()
    light = async_to_sync(services.aset_light_state)("salon", True, actor="ana", interface="mcp-ws")
    assert (light.name, light.on, light.room) == ("salon", True, Light.objects.get(name="salon").room)
    row = Light.objects.get(name="salon")
    assert row.on is True and row.updated_at >= started - timedelta(seconds=1)
    event = Event.objects.get(action="light.set")
    assert (event.actor, event.interface, event.target) == ("ana", "mcp-ws", "light:salon")
    assert (event.before, event.after) == ({"on": False}, {"on": True})
    assert started - timedelta(seconds=1) <= event.at <= timezone.now()
    async_to_sync(services.aset_alarm_state)(True, actor="ana", interface="mcp-ws")
    assert Alarm.objects.get().armed is True
    assert Event.objects.get(action="alarm.set").after == {"armed": True}


def test_a_failed_loop_write_leaves_nothing(transactional_db, no_db_thread):
    services.seed_home()
    before = Event.objects.count()
    with pytest.raises(LightNotFound):
        async_to_sync(services.aset_light_state)("nope", True, actor="ana", interface="mcp-ws")
    assert Event.objects.count() == before


def test_a_held_write_lock_sends_the_write_to_the_database_thread(transactional_db, monkeypatch):
    services.seed_home()
    other = sqlite3.connect(connection.settings_dict["NAME"], isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process is writing
    try:
        assert loop_writes.try_write(services._change_light, "salon", True, actor="a", interface="i") is (
            loop_writes.UNAVAILABLE
        )
    finally:
        other.execute("ROLLBACK")
        other.close()
    async_to_sync(services.aset_light_state)("salon", True, actor="ana", interface="mcp-ws")
    assert Light.objects.get(name="salon").on is True
