"""The database channel layer (common.layers): Channels' API in memory within a process, and
through the database between two layer instances, which stand for two hub processes (each
has its own name, memory and feed thread)."""

import asyncio
import threading

import pytest
from channels.exceptions import ChannelFull
from django.db import connection, transaction
from django.utils import timezone

from common.layers import DatabaseChannelLayer
from common.models import FeedMessage


async def heard(layer: DatabaseChannelLayer, channel: str, timeout: float = 5) -> dict:
    return await asyncio.wait_for(layer.receive(channel), timeout)


def test_within_a_process_channels_and_groups_need_no_database():
    """No database access at all here: a process's own deliveries never wait for it."""

    async def scenario():
        layer = DatabaseChannelLayer(capacity=1)
        first, full, last = [await layer.new_channel() for _ in range(3)]
        for channel in (first, full, last):
            await layer.group_add("home", channel)
        await layer.send(full, {"type": "other"})  # fills its only slot
        with pytest.raises(ChannelFull):
            await layer.send(full, {"type": "more"})
        await layer.group_send("home", {"type": "home.event", "n": 1})
        got = [(await heard(layer, c)).get("n") for c in (first, full, last)]
        await layer.group_discard("home", first)
        await layer.group_send("home", {"type": "home.event", "n": 2})
        later = [(await heard(layer, c)).get("n") for c in (full, last)]
        waiting = asyncio.ensure_future(layer.receive(first))
        await asyncio.sleep(0.1)
        assert not waiting.done()  # no longer a member: did not hear n=2
        waiting.cancel()
        await layer.close()
        return got, later

    got, later = asyncio.run(scenario())
    assert got == [1, None, 1]  # `full` got its own message and missed n=1; the others did not
    assert later == [2, 2]


def test_two_processes_hear_each_others_groups_and_channels(transactional_db):
    async def scenario():
        a, b = DatabaseChannelLayer(), DatabaseChannelLayer()
        listener = await b.new_channel()
        await b.group_add("home", listener)
        replies = await a.new_channel()
        await a.group_add("nobody-in-b", replies)
        await asyncio.sleep(2.5)  # both registered, each seen by the other
        await a.group_send("home", {"type": "home.event", "n": 1})
        first = await heard(b, listener)
        await b.send(replies, {"type": "reply", "to": first["n"]})  # a channel of the other process
        reply = await heard(a, replies)
        await asyncio.to_thread(announce_in_transactions, a)
        committed = await heard(b, listener)
        await asyncio.sleep(0.3)
        rolled_back = asyncio.ensure_future(b.receive(listener))
        await asyncio.sleep(0.3)
        assert not rolled_back.done()
        rolled_back.cancel()
        await a.close()
        await b.close()
        return first, reply, committed

    first, reply, committed = asyncio.run(scenario())
    assert first == {"type": "home.event", "n": 1}
    assert reply == {"type": "reply", "to": 1}
    assert committed == {"type": "home.event", "n": "committed"}


def announce_in_transactions(layer: DatabaseChannelLayer) -> None:
    """A change announced and committed, then one announced and rolled back."""
    with transaction.atomic():
        layer.announce("home", {"type": "home.event", "n": "committed"})
    with pytest.raises(RuntimeError), transaction.atomic():
        layer.announce("home", {"type": "home.event", "n": "rolled back"})
        raise RuntimeError("the change failed")


@pytest.mark.skipif(connection.vendor != "postgresql", reason="SQLite commits ids in order")
def test_a_message_committed_after_a_later_one_is_still_heard(transactional_db):
    """On PostgreSQL an id taken first may commit last: the reader looks for it again."""
    taken, release = threading.Event(), threading.Event()

    def slow_writer(origin: str) -> None:
        with transaction.atomic():
            FeedMessage.objects.create(
                origin=origin, group="home", message={"type": "home.event", "n": "slow"}, at=timezone.now()
            )
            taken.set()
            release.wait(10)

    async def scenario():
        a, b = DatabaseChannelLayer(), DatabaseChannelLayer()
        listener = await b.new_channel()
        await b.group_add("home", listener)
        await a.new_channel()
        await asyncio.sleep(2.5)
        writer = asyncio.ensure_future(asyncio.to_thread(slow_writer, a.name))
        await asyncio.to_thread(taken.wait, 10)
        await a.group_send("home", {"type": "home.event", "n": "fast"})
        fast = await heard(b, listener)
        release.set()
        await writer
        slow = await heard(b, listener)
        await a.close()
        await b.close()
        return fast, slow

    fast, slow = asyncio.run(scenario())
    assert (fast["n"], slow["n"]) == ("fast", "slow")
