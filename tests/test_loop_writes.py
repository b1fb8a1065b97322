"""Home writes run on the event loop (SQLite, lock free at once) write exactly what the
database thread would, audit in the same transaction, and step aside when the lock is taken."""

import asyncio
import sqlite3
import threading
from datetime import timedelta
from pathlib import Path

import pytest
from asgiref.sync import async_to_sync
from django.db import connection
from django.utils import timezone

from devices import audit, loop_writes, services, statements
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
    assert row.updated_at == event.at  # one moment for the change and its audit
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


def _gathered(*writes):
    """Run the coroutines of `writes` together on one loop; their results or exceptions."""

    async def together():
        return await asyncio.gather(*writes, return_exceptions=True)

    return async_to_sync(together)()


def test_writes_made_together_share_one_commit_and_a_bad_one_spoils_none(
    transactional_db, no_db_thread, monkeypatch
):
    services.seed_home()
    transactions = []
    begin = loop_writes._begin
    monkeypatch.setattr(loop_writes, "_begin", lambda: transactions.append(1) or begin())
    names = ["salon", "cocina", "nope", "dormitorio", "bano"]
    results = _gathered(
        *(services.aset_light_state(n, True, actor=f"a-{n}", interface="mcp-ws") for n in names)
    )
    assert len(transactions) == 1
    assert isinstance(results[2], LightNotFound)
    assert [r.name for i, r in enumerate(results) if i != 2] == ["salon", "cocina", "dormitorio", "bano"]
    assert set(Light.objects.filter(on=True).values_list("name", flat=True)) == {
        "salon",
        "cocina",
        "dormitorio",
        "bano",
    }
    events = Event.objects.filter(action="light.set")
    assert sorted(events.values_list("actor", "target")) == sorted(
        (f"a-{n}", f"light:{n}") for n in names if n != "nope"
    )


def test_writes_made_together_go_to_the_database_thread_when_the_lock_is_taken(transactional_db, monkeypatch):
    services.seed_home()
    monkeypatch.setattr(loop_writes, "_begin", lambda: None)  # as if another process held the lock
    threaded = []
    in_thread = services._awrite_in_db_thread

    async def counted(*args, **kwargs):
        threaded.append(args[0].__name__)
        return await in_thread(*args, **kwargs)

    monkeypatch.setattr(services, "_awrite_in_db_thread", counted)
    results = _gathered(
        services.aset_light_state("salon", True, actor="ana", interface="mcp-ws"),
        services.aset_alarm_state(True, actor="ana", interface="mcp-ws"),
    )
    assert not any(isinstance(r, BaseException) for r in results)
    assert Light.objects.get(name="salon").on is True and Alarm.objects.get().armed is True
    assert Event.objects.filter(action__in=["light.set", "alarm.set"]).count() == 2
    assert len(threaded) == 2  # both took the database thread, none the loop


def _tool_call_row(n: int) -> dict:
    return statements.event_row(
        at=timezone.now(),
        actor="bot",
        interface="mcp-ws",
        action="tool.call",
        target=f"tool:t{n}",
        before={},
        after={},
    )


def test_the_tool_call_audit_is_written_on_the_loop_or_waits_for_the_lock(transactional_db, monkeypatch):
    buffer = audit.AuditBuffer()
    for n in range(3):
        buffer.add(_tool_call_row(n))
    other = sqlite3.connect(connection.settings_dict["NAME"], isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process is writing: nothing written, nothing lost
    try:
        assert buffer._flush_on_loop() is False
        assert len(buffer) == 3
    finally:
        other.execute("ROLLBACK")
        other.close()

    def no_thread():
        raise AssertionError("the audit batch went to the database thread")

    monkeypatch.setattr(buffer, "flush", no_thread)
    async_to_sync(buffer._aflush)()
    assert len(buffer) == 0
    assert sorted(Event.objects.filter(action="tool.call").values_list("target", flat=True)) == [
        "tool:t0",
        "tool:t1",
        "tool:t2",
    ]


def test_the_wal_stops_growing_under_sustained_writes(transactional_db):
    """The checkpoint runs in the database thread while the loop goes on writing; unless it
    makes the next writer start the WAL over, the file grows by every write, for ever (it
    reached 670 MB in ten seconds of writes under daphne)."""
    services.seed_home()
    wal = Path(connection.settings_dict["NAME"] + "-wal")

    async def write(count: int) -> None:
        for n in range(count):
            await services.aset_light_state("salon", bool(n & 1), actor="ana", interface="mcp-ws")
            await asyncio.sleep(0)  # as between requests: the checkpoint task gets its turn
        for task in list(loop_writes._tasks):
            await task

    def as_served(count: int) -> None:
        """On a loop of its own whose database thread is asgiref's, as under daphne."""
        thread = threading.Thread(target=asyncio.run, args=(write(count),))
        thread.start()
        thread.join()

    as_served(2 * loop_writes.CHECKPOINT_EVERY)
    first = wal.stat().st_size
    as_served(16 * loop_writes.CHECKPOINT_EVERY)  # nine times as many writes in all
    assert wal.stat().st_size < 4 * first  # a late checkpoint may let it reach a few rounds


def test_a_lone_writer_stops_waiting_a_turn_until_company_comes(transactional_db, no_db_thread, monkeypatch):
    """Under daphne the loop always has something ready, so every write waited a turn for
    company that never came; after a few lonely turns it commits at once, and a write in
    PROBE_EVERY still looks, so writers arriving together share commits again."""
    services.seed_home()
    gathered: list[int] = []
    together = loop_writes._commit_together

    def counting(writes):
        gathered.append(len(writes))
        together(writes)

    monkeypatch.setattr(loop_writes, "_commit_together", counting)

    async def scenario() -> int:
        async def spin():  # something always ready, as in a server's loop
            while True:
                await asyncio.sleep(0)

        spinner = asyncio.ensure_future(spin())
        try:
            for n in range(40):
                await services.aset_light_state("salon", bool(n & 1), actor="ana", interface="mcp-ws")
            alone = len(gathered)
            for n in range(3):
                await asyncio.gather(
                    *(
                        services.aset_light_state("salon", bool(n & 1), actor=f"a{i}", interface="mcp-ws")
                        for i in range(16)
                    )
                )
            return alone
        finally:
            spinner.cancel()

    alone = async_to_sync(scenario)()
    assert alone <= loop_writes.LONELY_AFTER + 40 // loop_writes.PROBE_EVERY + 1
    assert max(gathered) > 1
    assert Event.objects.filter(action="light.set").count() == 40 + 3 * 16
