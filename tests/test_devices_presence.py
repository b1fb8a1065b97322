"""A device left marked online by a hub process that died goes offline; a live one stays."""

import asyncio
import signal
import subprocess
import sys

import httpx
import pytest
from asgiref.sync import async_to_sync

from devices.models import Agent
from tests.conftest import free_port
from tests.devices_support import ROOT, hub, new_device
from tests.mqtt_support import wait_until

pytestmark = pytest.mark.live
FAST = {"DEVICES_PRESENCE_SECONDS": "0.5"}


def test_devices_of_a_dead_process_go_offline_and_live_ones_stay(live_env):
    port = free_port()
    doomed = subprocess.Popen(
        [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "homehub.asgi:application"],
        cwd=ROOT,
        env={**live_env, **FAST},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    wait_until(lambda: _up(base), what="the first hub")
    orphan = new_device(base, "aa:bb:cc:00:00:0a")

    def online(agent_id: str) -> bool:
        return Agent.objects.get(agent_id=agent_id).online

    async def scenario() -> None:
        await orphan.connect()
        await asyncio.to_thread(wait_until, lambda: online("aa:bb:cc:00:00:0a"), what="online")
        doomed.send_signal(signal.SIGKILL)  # no disconnect handlers run
        await asyncio.to_thread(doomed.wait)
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


def _up(base: str) -> bool:
    try:
        httpx.get(base + "/.well-known/oauth-protected-resource", timeout=1)
    except httpx.HTTPError:
        return False
    return True
