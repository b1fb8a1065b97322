"""One MQTT agent, two hub workers: whatever order their steps interleave in, exactly one
worker owns the agent (the one whose session the database recorded last), so each call
reaches the agent once."""

import asyncio

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from devices.agents import agent_channels
from devices.soms.link import AgentBridge, parse_announcement

AGENT = "esp32_twice"
ANNOUNCEMENT = parse_announcement(b'{"agent_id": "esp32_twice", "capabilities": ["led"]}')


def _owners(transactional_db, monkeypatch, *, crossing: bool) -> list[str]:
    async def scenario() -> list[str]:
        w1, w2 = (
            AgentBridge(lambda topic, payload: None, owner=name, default_silence=60) for name in ("w1", "w2")
        )
        await w1.start()
        await w2.start()
        layer = get_channel_layer()
        group_add = layer.group_add

        async def join(group: str, channel: str) -> None:
            if crossing and channel == w1.channel and group == agent_channels.agent_group(AGENT):
                # The agent's second announcement, at another worker, goes all the way
                # through (its "taken over" word sent before w1 is in the group to hear it).
                await w2.on_announcement(ANNOUNCEMENT)
            await group_add(group, channel)

        monkeypatch.setattr(layer, "group_add", join)
        await w1.on_announcement(ANNOUNCEMENT)
        if not crossing:
            await w2.on_announcement(ANNOUNCEMENT)
        await asyncio.sleep(0.3)  # the "taken over" words delivered and heard
        owners = [w.owner for w in (w1, w2) if AGENT in w.links]
        await w1.stop()
        await w2.stop()
        return owners

    return async_to_sync(scenario)()


def test_a_later_announcement_at_another_worker_takes_the_agent_over(transactional_db, monkeypatch):
    assert _owners(transactional_db, monkeypatch, crossing=False) == ["w2"]


def test_announcements_crossing_between_two_workers_leave_one_owner(transactional_db, monkeypatch):
    """Before, both kept the agent here, and every call reached it twice."""
    assert _owners(transactional_db, monkeypatch, crossing=True) == ["w2"]
