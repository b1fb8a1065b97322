"""Two hub processes sharing a Redis channel layer: the device on one, the LLM agent on the other."""

import shutil
import subprocess

import httpx
import pytest
import redis
from asgiref.sync import async_to_sync

from audit.models import Event
from tests.conftest import free_port
from tests.devices_support import LlmSession, eventually, hub, new_device

pytestmark = pytest.mark.live
MAC = "aa:bb:cc:00:00:03"
VOLUME = "aa_bb_cc_00_00_03__self_audio_speaker_set_volume"


def test_device_on_one_process_agent_on_another(live_env, make_token, redis_url):
    token = make_token(name="far-llm")
    with hub(live_env, REDIS_URL=redis_url) as device_hub, hub(live_env, REDIS_URL=redis_url) as agent_hub:
        device = new_device(device_hub, MAC)

        async def scenario():
            async with LlmSession(agent_hub, token) as llm:
                await device.connect()
                await llm.next_notification("notifications/tools/list_changed")
                await eventually(lambda: _has(llm, VOLUME))
                called = await llm.call(VOLUME, {"volume": 55})
                await device.close()
                await llm.next_notification("notifications/tools/list_changed")
                offline = await llm.call(
                    "call_agent_tool", {"agent_id": MAC, "tool": "self.get_device_status"}
                )
            return called, offline

        called, offline = async_to_sync(scenario)()

    assert called == {"content": [{"type": "text", "text": "true"}], "isError": False}
    assert device.state.volume == 55
    assert offline["isError"] and "is offline" in offline["content"][0]["text"]
    assert Event.objects.filter(action="agent.call", actor="far-llm", after__ok=True).count() == 1


async def _has(llm: LlmSession, name: str) -> bool:
    return name in await llm.tool_names()


def test_calls_reach_a_device_on_another_process_again_after_redis_restarts(live_env, make_token, tmp_path):
    """Redis restarted under a running hub (its messages lost, the processes' subscriptions
    gone with it): the processes subscribe again on their own, and a call from one reaches
    the device connected to the other, no restart of the hub needed."""
    port = free_port()
    url = f"redis://127.0.0.1:{port}/0"
    argv = [shutil.which("redis-server") or "redis-server", "--port", str(port), "--save", ""]
    argv += ["--dir", str(tmp_path)]
    server = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
    token = make_token(name="patient-llm")
    try:
        with hub(live_env, REDIS_URL=url) as device_hub, hub(live_env, REDIS_URL=url) as agent_hub:
            device = new_device(device_hub, MAC)

            async def scenario():
                nonlocal server
                async with LlmSession(agent_hub, token) as llm:
                    await device.connect()
                    await eventually(lambda: _has(llm, VOLUME))
                    before = await llm.call(VOLUME, {"volume": 33})
                    server.terminate()
                    server.wait(10)
                    server = subprocess.Popen(argv, stdout=subprocess.DEVNULL)

                    async def answered() -> bool:
                        return (await llm.call(VOLUME, {"volume": 44}))["isError"] is False

                    await eventually(answered, timeout=30)
                    await device.close()
                return before

            before = async_to_sync(scenario)()
    finally:
        server.terminate()
        server.wait(10)
    assert before["isError"] is False and device.state.volume == 44


def test_answers_from_another_process_come_back_on_one_channel(live_env, make_token, redis_url):
    """Calls to a device connected to another process, and `/healthz`'s probes of the layer,
    are answered on the asking process's one channel for answers: twenty more of each leave
    Redis with as many subscriptions as before (a channel per question would stay
    subscribed for as long as the process lives)."""
    token = make_token(name="counted-llm")
    subscriptions = redis.Redis.from_url(redis_url)
    pattern = f"homehub.{redis_url.rsplit('/', 1)[1]}.*"
    with hub(live_env, REDIS_URL=redis_url) as device_hub, hub(live_env, REDIS_URL=redis_url) as agent_hub:
        device = new_device(device_hub, MAC)

        async def scenario():
            async with LlmSession(agent_hub, token) as llm:
                await device.connect()
                await eventually(lambda: _has(llm, VOLUME))
                await llm.call(VOLUME, {"volume": 1})
                httpx.get(agent_hub + "/healthz", timeout=10).raise_for_status()
                before = len(subscriptions.pubsub_channels(pattern))
                for volume in range(2, 22):
                    assert (await llm.call(VOLUME, {"volume": volume}))["isError"] is False
                    httpx.get(agent_hub + "/healthz", timeout=10).raise_for_status()
                after = len(subscriptions.pubsub_channels(pattern))
                await device.close()
            return before, after

        before, after = async_to_sync(scenario)()
    assert device.state.volume == 21
    assert before == after
