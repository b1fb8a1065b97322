"""Two hub processes sharing a Redis channel layer: the device on one, the LLM agent on the other."""

import asyncio

import pytest
from asgiref.sync import async_to_sync

from audit.models import Event
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


def test_calls_still_reach_a_device_connected_longer_than_the_group_expiry(live_env, make_token, redis_url):
    """Redis forgets group memberships after REDIS_GROUP_EXPIRY_SECONDS (a day by default);
    the device's connection joins again before that."""
    token = make_token(name="patient-llm")
    short = {"REDIS_URL": redis_url, "REDIS_GROUP_EXPIRY_SECONDS": "2"}
    with hub(live_env, **short) as device_hub, hub(live_env, **short) as agent_hub:
        device = new_device(device_hub, MAC)

        async def scenario():
            async with LlmSession(agent_hub, token) as llm:
                await device.connect()
                await eventually(lambda: _has(llm, VOLUME))
                await asyncio.sleep(5)  # well past the expiry
                called = await llm.call(VOLUME, {"volume": 33})
                await device.close()
            return called

        called = async_to_sync(scenario)()
    assert called["isError"] is False and device.state.volume == 33
