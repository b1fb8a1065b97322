"""Writes from the event loop share the hop to the database thread (common.write_batches), and
each stays its own: committed and audited, or failed alone."""

import asyncio
import threading

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.layers import get_channel_layer
from django.db import transaction

from audit.changes import CHANGES_GROUP
from audit.models import Event
from common.write_batches import batched
from devices.home import services
from devices.home.errors import LightNotFound
from devices.home.models import Light
from tests.common.recording_layer import SendersRecorded

LIGHTS = ("salon", "cocina", "dormitorio", "bano", "garage")


def test_writes_made_at_once_are_each_committed_and_audited_and_fail_alone(transactional_db):
    services.seed_home()

    async def scenario():
        calls = [
            services.aset_light_state(name, True, actor=f"agent-{i}", interface="mcp-ws")
            for i, name in enumerate(LIGHTS)
        ]
        calls.insert(2, services.aset_light_state("nope", True, actor="agent-x", interface="mcp-ws"))
        calls.append(services.aset_alarm_state(True, actor="agent-y", interface="mcp-ws"))
        return await asyncio.gather(*calls, return_exceptions=True)

    outcomes = asyncio.run(scenario())
    assert isinstance(outcomes[2], LightNotFound)
    assert [o for i, o in enumerate(outcomes) if i != 2] == [None] * 6
    assert dict(Light.objects.values_list("name", "on")) == dict.fromkeys(LIGHTS, True)
    events = Event.objects.filter(action__in=["light.set", "alarm.set"])
    assert sorted(events.values_list("actor", flat=True)) == sorted(
        [f"agent-{i}" for i in range(len(LIGHTS))] + ["agent-y"]
    )
    assert not Event.objects.filter(actor="agent-x").exists()


def test_a_write_from_an_event_loop_is_announced_from_that_loop(transactional_db, redis_url, settings):
    """With Redis, a batched write's announcement is sent by the writer's own event loop once
    the write commits, not handed to a thread of the feed's own (a third thread wanting the
    GIL for every write cost a third of a write's CPU)."""
    backend = "tests.common.recording_layer.SendersRecorded"
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": backend, "CONFIG": {"hosts": [redis_url]}}}
    services.seed_home()

    async def scenario():
        layer = get_channel_layer()
        listener = await layer.new_channel()
        await layer.group_add(CHANGES_GROUP, listener)
        await services.aset_light_state("salon", True, actor="agent", interface="mcp-ws")
        async with asyncio.timeout(5):  # what else was announced meanwhile (the seeding) aside
            while (heard := await layer.receive(listener))["event"].get("actor") != "agent":
                pass
        return heard

    heard = asyncio.run(scenario())
    assert heard["event"]["kind"] == "light"
    recorded = SendersRecorded.senders
    senders = [thread for thread, message in recorded if message["event"].get("actor") == "agent"]
    assert senders == [threading.current_thread().name]


@pytest.fixture
def database_thread_held(transactional_db):
    """A batched call that holds the database thread until released, and what ran meanwhile."""
    release = threading.Event()
    started = threading.Event()

    def hold() -> None:
        started.set()
        release.wait(10)

    return batched(hold), started, release


def test_calls_made_while_a_batch_runs_go_together_each_in_its_own_transaction(database_thread_held):
    hold, started, release = database_thread_held
    steps = []

    def note(i: int) -> bool:
        steps.append(f"ran {i}")
        return transaction.get_autocommit()  # True: no transaction shared with the others

    anote = batched(note)

    async def answered(i: int) -> bool:
        alone = await anote(i)
        steps.append(f"answered {i}")
        return alone

    async def scenario():
        first = asyncio.ensure_future(hold())
        await asyncio.to_thread(started.wait, 10)
        waiting = [asyncio.ensure_future(answered(i)) for i in range(5)]
        await asyncio.sleep(0.05)
        release.set()
        await first
        return await asyncio.gather(*waiting)

    assert asyncio.run(scenario()) == [True] * 5
    # One hop for the five: all ran in the database thread before any was answered.
    assert steps == [f"ran {i}" for i in range(5)] + [f"answered {i}" for i in range(5)]


def test_a_call_cancelled_before_its_batch_starts_is_not_run(database_thread_held):
    hold, started, release = database_thread_held
    ran = []
    arecord = batched(ran.append)

    async def scenario():
        first = asyncio.ensure_future(hold())
        await asyncio.to_thread(started.wait, 10)
        dropped = asyncio.ensure_future(arecord("dropped"))
        kept = asyncio.ensure_future(arecord("kept"))
        await asyncio.sleep(0.05)
        dropped.cancel()
        release.set()
        await first
        await kept
        return dropped.cancelled()

    assert asyncio.run(scenario()) is True
    assert ran == ["kept"]


def test_a_batch_runs_in_a_waiting_callers_thread_never_in_one_already_answered():
    """A REST or dashboard write reaches a batch from its request's thread (through
    `async_to_sync`). Once that write is answered its thread moves on: the batches after it,
    made of others' writes, must not be sent to it (they were, and the third was cancelled with
    "CurrentThreadExecutor already quit")."""
    started_a, release_a, started_b, release_b = (threading.Event() for _ in range(4))

    def hold(started: threading.Event, release: threading.Event) -> str:
        started.set()
        release.wait(10)
        return "held"

    ahold, anote = batched(hold), batched(lambda: "noted")

    async def serve():
        def request() -> str:  # a view in a request's own thread, its write through the pipeline
            return async_to_sync(ahold)(started_a, release_a)

        a = asyncio.ensure_future(sync_to_async(request, thread_sensitive=False)())
        await asyncio.to_thread(started_a.wait, 5)
        b = asyncio.ensure_future(ahold(started_b, release_b))  # a session's write, behind it
        await asyncio.sleep(0.05)
        release_a.set()
        await asyncio.to_thread(started_b.wait, 5)
        c = asyncio.ensure_future(anote())  # another, behind the second batch
        await asyncio.sleep(0.05)
        release_b.set()
        return await asyncio.wait_for(asyncio.gather(a, b, c), 10)

    assert asyncio.run(serve()) == ["held", "held", "noted"]
