"""The in-memory channel layer's group send (homehub.channel_layers): every member hears a
message once, a full channel misses it without stopping the others."""

import asyncio

import pytest
from channels.layers import get_channel_layer
from django.conf import settings

from homehub.channel_layers import InMemoryChannelLayer


@pytest.mark.skipif(bool(settings.REDIS_URL), reason="REDIS_URL set: the Redis layer is in use")
def test_without_redis_the_hub_uses_the_lean_layer():
    assert isinstance(get_channel_layer(), InMemoryChannelLayer)


def test_group_send_reaches_every_member_and_a_full_channel_misses_only_its_copy():
    async def scenario():
        layer = InMemoryChannelLayer(capacity=1)
        await layer.group_send("home", {"type": "home.event", "n": 0})  # nobody listens yet
        first, full, last = [await layer.new_channel() for _ in range(3)]
        for channel in (first, full, last):
            await layer.group_add("home", channel)
        await layer.send(full, {"type": "other"})  # fills its only slot
        await layer.group_send("home", {"type": "home.event", "n": 1})
        heard = [(await asyncio.wait_for(layer.receive(c), 5)).get("n") for c in (first, full, last)]
        await layer.group_discard("home", first)
        await layer.group_send("home", {"type": "home.event", "n": 2})
        later = [(await asyncio.wait_for(layer.receive(c), 5)).get("n") for c in (full, last)]
        return heard, later, layer.channels[first].qsize() if first in layer.channels else 0

    heard, later, left_for_first = asyncio.run(scenario())
    assert heard == [1, None, 1]  # `full` got its own message and missed n=1; the others did not
    assert later == [2, 2]
    assert left_for_first == 0  # no longer a member: did not hear n=2
