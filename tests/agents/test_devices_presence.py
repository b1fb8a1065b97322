"""A device left marked online by a hub process that died goes offline; a live one stays."""

import asyncio

import pytest
from asgiref.sync import async_to_sync

from devices.agents.models import Agent
from tests.devices_support import hub, new_device
from tests.hub_support import running_hub
from tests.mqtt_support import wait_until

pytestmark = pytest.mark.live
FAST = {"DEVICES_PRESENCE_SECONDS": "0.5"}


def test_devices_of_a_dead_process_go_offline_and_live_ones_stay(live_env):
    with running_hub(live_env, **FAST) as doomed:
        orphan = new_device(doomed.base, "aa:bb:cc:00:00:0a")

        def online(agent_id: str) -> bool:
            return Agent.objects.get(agent_id=agent_id).online

        async def scenario() -> None:
            await orphan.connect()
            await asyncio.to_thread(wait_until, lambda: online("aa:bb:cc:00:00:0a"), what="online")
            await asyncio.to_thread(doomed.stop, kill=True)  # no disconnect handlers run
            assert await asyncio.to_thread(online, "aa:bb:cc:00:00:0a")  # nobody said otherwise yet
            with hub(live_env, **FAST) as survivor:
                alive = await asyncio.to_thread(new_device, survivor, "aa:bb:cc:00:00:0b")
                await alive.connect()
                await asyncio.to_thread(
                    wait_until, lambda: not online("aa:bb:cc:00:00:0a"), timeout=10, what="the orphan offline"
                )
                await asyncio.sleep(2)  # several rounds
                assert await asyncio.to_thread(online, "aa:bb:cc:00:00:0b")
                await alive.close()

        async_to_sync(scenario)()
