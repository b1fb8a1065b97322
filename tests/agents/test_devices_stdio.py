"""Devices from every door: an ESP32 device connected to a daphne (`manage.py simulate_device`)
is listed and called from `mcp_stdio`, a process of its own, on the default database channel
layer and with Redis; `list_agents` and `call_agent_tool` agree while it is online and once it
has gone."""

import asyncio

import pytest
from asgiref.sync import async_to_sync

from audit.models import Event
from devices.agents.models import Agent
from devices.agents.services import register_agent
from tests.devices_support import device_url, eventually
from tests.hub_support import running_hub
from tests.mqtt_support import Process
from tests.stdio_support import StdioClient

pytestmark = pytest.mark.live
MAC = "aa:bb:cc:00:00:16"
VOLUME = "aa_bb_cc_00_00_16__self_audio_speaker_set_volume"


@pytest.fixture(params=["database", "redis"])
def layer_env(request, live_env):
    if request.param == "redis":
        return {**live_env, "REDIS_URL": request.getfixturevalue("redis_url")}
    return live_env


def agent_listed(listed: dict) -> dict:
    return next(a for a in listed["structuredContent"]["agents"] if a["agent_id"] == MAC)


def test_a_device_on_the_hub_is_listed_and_called_from_stdio(layer_env, tmp_path):
    _, token = register_agent(MAC, transport="ws", actor="test", interface=Event.Interface.SYSTEM)
    with running_hub(layer_env) as hub:

        async def scenario():
            async with StdioClient(layer_env) as stdio:
                assert VOLUME not in await stdio.tool_names()
                device = Process(
                    ["simulate_device", MAC, token, "--url", device_url(hub.base)],
                    layer_env,
                    tmp_path / "device.log",
                )
                try:
                    changed = await asyncio.wait_for(stdio.notifications.get(), 15)
                    assert changed["method"] == "notifications/tools/list_changed"
                    await eventually(lambda: _offers(stdio, VOLUME), 10)
                    listed = agent_listed(await stdio.call("list_agents", {}))
                    called = await stdio.call(VOLUME, {"volume": 40})
                    status = await stdio.call(
                        "call_agent_tool", {"agent_id": MAC, "tool": "self.get_device_status"}
                    )
                finally:
                    device.stop()
                await eventually(lambda: _offline(), 10)
                gone = agent_listed(await stdio.call("list_agents", {}))
                refused = await stdio.call(
                    "call_agent_tool", {"agent_id": MAC, "tool": "self.get_device_status"}
                )
            return listed, called, status, gone, refused

        listed, called, status, gone, refused = async_to_sync(scenario)()
    assert listed["online"] and {t["gateway_name"] for t in listed["tools"]} >= {VOLUME}
    assert called == {"content": [{"type": "text", "text": "true"}], "isError": False}
    assert not status["isError"] and '"volume": 40' in status["content"][0]["text"]
    assert not gone["online"]
    assert refused["isError"] and "is offline" in refused["content"][0]["text"]
    calls = Event.objects.filter(action="agent.call", interface="mcp-stdio").order_by("id")
    assert [(e.before["tool"], e.after["ok"]) for e in calls] == [
        ("self.audio_speaker.set_volume", True),
        ("self.get_device_status", True),
        ("self.get_device_status", False),
    ]


async def _offers(stdio: StdioClient, name: str) -> bool:
    return name in await stdio.tool_names()


async def _offline() -> bool:
    return not await Agent.objects.filter(agent_id=MAC, online=True).aexists()
