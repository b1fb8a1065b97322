"""The home state kept in process for MCP reads: kept correct by the change feed."""

import asyncio
import subprocess
import sys
import time
from pathlib import Path

import pytest
from asgiref.sync import async_to_sync, sync_to_async

from devices.home import services
from devices.home import state as home_state
from devices.home.models import Light

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def counted_reads(monkeypatch):
    """How many times the state was read from the database."""
    reads = []
    real = home_state._aread

    async def counting(*args):
        reads.append(1)
        return await real(*args)

    monkeypatch.setattr(home_state, "_aread", counting)
    return reads


async def until_kept(reads: list) -> dict:
    """Read until a read is answered from the copy (the listener settled, the feed heard)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        before = len(reads)
        state = await home_state.all_states()
        if len(reads) == before:
            return state
        await asyncio.sleep(0.1)
    raise AssertionError("the copy was never trusted")


def test_a_change_made_by_another_process_reaches_the_copy(live_env, counted_reads):
    change = (
        "from devices.home import services; "
        "services.set_light_state('salon', True, actor='other', interface='system')"
    )

    async def scenario():
        assert (await until_kept(counted_reads))["lights"]["salon"] is False
        await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "manage.py", "shell", "-c", change],
            cwd=ROOT,
            env=live_env,
            check=True,
        )
        started = time.monotonic()
        while not (await home_state.all_states())["lights"]["salon"]:
            assert time.monotonic() - started < 1, "the other process's change never arrived"
            await asyncio.sleep(0.02)
        assert await home_state.lights_on() == {"on": ["salon"]}

    asyncio.run(scenario())


def test_a_change_through_the_services_is_read_at_once(transactional_db, counted_reads):
    services.seed_home()

    async def scenario():
        assert (await until_kept(counted_reads))["alarm"] is False
        await services.aset_alarm_state(True, actor="t", interface="system")
        assert await home_state.alarm_status() == {"armed": True}
        await until_kept(counted_reads)
        await sync_to_async(services.set_person_presence)("Ana", True, actor="t", interface="system")
        reads = len(counted_reads)
        assert await home_state.presence() == {"present": True, "known_people": ["Ana"]}
        assert len(counted_reads) == reads + 1  # the commit dropped the copy
        assert (await until_kept(counted_reads))["presence"]["known_people"] == ["Ana"]

    asyncio.run(scenario())


def test_nothing_read_inside_a_transaction_is_kept(db):
    services.seed_home()  # uncommitted: the test's transaction rolls it back
    assert async_to_sync(home_state.all_states)()["lights"] == {
        n: False for n in ("salon", "cocina", "dormitorio", "bano", "garage")
    }
    assert home_state._copy is None


def test_calls_waiting_behind_a_read_share_the_next_one(monkeypatch):
    """While the copy may not be used, each call gets a read begun after it arrived, and the
    calls that arrived while one was under way share the next."""
    reads = []

    async def slow_read(generation, epoch):
        reads.append(epoch)
        await asyncio.sleep(0.05)
        return {"lights": {}, "alarm": len(reads) == 2, "presence": {"present": False, "known_people": []}}

    monkeypatch.setattr(home_state, "_aread", slow_read)
    monkeypatch.setattr(home_state._listener, "epoch", lambda: None)  # not trusted yet

    async def scenario():
        first = asyncio.ensure_future(home_state.alarm_status())
        await asyncio.sleep(0.01)  # its read under way
        waiting = [asyncio.ensure_future(home_state.alarm_status()) for _ in range(5)]
        waiting[0].cancel()  # a call that gives up leaves the read to the others
        answers = await asyncio.gather(first, *waiting[1:])
        assert answers == [{"armed": False}] + [{"armed": True}] * 4
        assert len(reads) == 2
        for _ in range(3):  # one call at a time: a read each
            await home_state.alarm_status()
        assert len(reads) == 5

    asyncio.run(scenario())


def test_a_change_whose_message_was_lost_is_read_within_the_copys_lifetime(transactional_db, counted_reads):
    """A change the feed never announced (as when Redis restarts under its pub/sub layer and
    the message is lost) reaches MCP reads once the copy has lived COPY_SECONDS."""
    services.seed_home()

    async def scenario():
        assert (await until_kept(counted_reads))["lights"]["salon"] is False
        await sync_to_async(Light.objects.filter(name="salon").update)(on=True)  # no announcement
        assert (await home_state.all_states())["lights"]["salon"] is False  # the copy, trusted
        started = time.monotonic()
        while not (await home_state.all_states())["lights"]["salon"]:
            assert time.monotonic() - started < home_state.COPY_SECONDS + 1, "the copy outlived its lifetime"
            await asyncio.sleep(0.05)

    asyncio.run(scenario())
