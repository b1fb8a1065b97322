"""A stock xiaozhi device joins a live hub end to end, as README's "Connect a xiaozhi device"
says: the simulator does stock firmware's OTA exchange (check in, show the code, poll
`activate`), the owner adds it (the dashboard's form, `manage.py pair_device`), it connects
with the URL and token it was handed, an LLM calls its tools; once nobody talks to it, a call
fails at once saying why; unbinding hangs it up and its token stops working."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import time

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.layers import get_channel_layer
from django.core.management import call_command
from websockets.exceptions import InvalidStatus

from audit.models import Event
from devices.agents.models import Agent, AgentTool
from devices.xiaozhi.models import Activation
from devices.xiaozhi.simulator import SimulatedDevice
from tests.devices_support import LlmSession, eventually, hub
from tests.hub_support import ROOT
from tests.mqtt_support import Process

pytestmark = pytest.mark.live
MAC = "d8:3b:da:7a:00:01"


def stock_device(base: str, mac: str = MAC, **options) -> tuple[SimulatedDevice, asyncio.Queue[str]]:
    """A simulated stock device whose OTA URL points at the hub, and the codes it shows."""
    codes: asyncio.Queue[str] = asyncio.Queue()
    device = SimulatedDevice(
        "",
        mac,
        "",
        ota_url=base + "/xiaozhi/ota/",
        poll_seconds=0.1,
        on_code=lambda code, message: codes.put_nowait(code),
        **options,
    )
    return device, codes


@sync_to_async
def agent_row(mac: str = MAC) -> Agent | None:
    return Agent.objects.filter(agent_id=mac).first()


@sync_to_async
def tools_of(mac: str = MAC) -> list[str]:
    return list(AgentTool.objects.filter(agent__agent_id=mac, available=True).values_list("name", flat=True))


def test_added_on_the_dashboard_called_by_an_llm_then_unbound(live_env, staff_client, make_token):
    token = make_token(("devices", "read"))
    with hub(live_env) as base:

        async def scenario() -> dict:
            device, codes = stock_device(base)
            onboarding = asyncio.ensure_future(device.onboard())
            code = await asyncio.wait_for(codes.get(), 10)
            assert (await activation_states()) == ["pending"]
            added = await sync_to_async(staff_client.post)("/devices/add/", {"code": code, "name": "Desk"})
            assert added.status_code == 302
            answer = await asyncio.wait_for(onboarding, 10)
            assert answer["websocket"]["url"] == base.replace("http://", "ws://") + "/ws/devices/"
            assert device.token and device.url == answer["websocket"]["url"]

            await device.connect()
            await eventually(tools_of)
            async with LlmSession(base, token) as llm:
                listed = await llm.call("list_agents", {})
                mine = next(a for a in listed["structuredContent"]["agents"] if a["agent_id"] == MAC)
                assert mine["online"] and mine["connects_on_demand"] and mine["name"] == "Desk"
                called = await llm.call(
                    "call_agent_tool",
                    {"agent_id": MAC, "tool": "self.audio_speaker.set_volume", "arguments": {"volume": 35}},
                )
                assert not called["isError"] and device.state.volume == 35

                await device.close()  # the conversation ended: the device hangs up
                await eventually(lambda: offline())
                started = time.monotonic()
                refused = await llm.call(
                    "call_agent_tool",
                    {"agent_id": MAC, "tool": "self.audio_speaker.set_volume", "arguments": {"volume": 50}},
                )
                waited = time.monotonic() - started
                assert refused["isError"] and waited < 2
                text = refused["content"][0]["text"]
                assert "only while someone is talking to it" in text and "last reachable" in text

            # Spoken to again: the same URL and token, then unbound while connected.
            again = SimulatedDevice(device.url, MAC, device.token, client_id=device.client_id)
            await again.connect()
            await eventually(lambda: online())
            # The hub listens on the change feed since its first socket; this process (the
            # dashboard's, here) trusts what it last read of the live processes for a second.
            await eventually(sync_to_async(get_channel_layer().others_alive))
            unbound = await sync_to_async(staff_client.post)("/devices/unbind/", {"agent_id": MAC})
            assert unbound.status_code == 302
            await asyncio.wait_for(again.closed.wait(), 10)  # hung up by the hub
            with pytest.raises(InvalidStatus) as refused_socket:
                await SimulatedDevice(device.url, MAC, device.token).connect()
            assert refused_socket.value.response.status_code == 403
            # Its next start: a new code to show.
            device.ota_url = base + "/xiaozhi/ota/"
            restarted = asyncio.ensure_future(device.onboard())
            new_code = await asyncio.wait_for(codes.get(), 10)
            restarted.cancel()
            return {"first": code, "second": new_code}

        codes = async_to_sync(scenario)()
    assert codes["first"] != codes["second"]
    actions = list(
        Event.objects.filter(interface="dashboard").order_by("id").values_list("action", flat=True)
    )
    assert actions == ["agent.register", "xiaozhi.pair", "agent.revoke", "xiaozhi.unbind"]
    revoked = Event.objects.get(action="agent.revoke")
    assert Event.objects.filter(action="agent.disconnect", id__gt=revoked.id).count() == 1  # hung up once


@sync_to_async
def activation_states() -> list[str]:
    return [row.state for row in Activation.objects.all()]


async def offline() -> bool:
    row = await agent_row()
    return row is not None and not row.online


async def online() -> bool:
    row = await agent_row()
    return row is not None and row.online


def test_a_v2_device_added_with_pair_device(live_env):
    """A device with a serial number answers the challenge; the owner runs `pair_device CODE`."""
    with hub(live_env) as base:

        async def scenario() -> None:
            device, codes = stock_device(base, serial_number="SN-SIM-0000000000000000000000001")
            onboarding = asyncio.ensure_future(device.onboard())
            code = await asyncio.wait_for(codes.get(), 10)
            await eventually(answered)
            await sync_to_async(call_command)("pair_device", code)
            await asyncio.wait_for(onboarding, 10)
            await device.connect()
            assert await eventually(tools_of)
            await device.close()

        async_to_sync(scenario)()
    row = Activation.objects.get()
    assert row.state == "bound" and row.answer["serial_number"] == "SN-SIM-0000000000000000000000001"
    assert row.serial_number == row.answer["serial_number"] and row.activation_version == "2"


@sync_to_async
def answered() -> bool:
    return Activation.objects.filter(answered_at__isnull=False).exists()


def test_the_readme_steps_with_the_commands(live_env, tmp_path):
    """`simulate_device MAC --ota URL` shows a code, `pair_device CODE` binds it, the simulator
    connects: the README's steps, each a process of its own."""
    with hub(live_env) as base:
        simulator = Process(
            ["simulate_device", MAC, "--ota", base + "/xiaozhi/ota/"],
            {**live_env, "PYTHONUNBUFFERED": "1"},
            tmp_path / "simulator.log",
        )
        try:
            deadline = time.monotonic() + 20
            while not (found := re.search(r"pair_device (\d{6})", simulator.output())):
                assert time.monotonic() < deadline and simulator.proc.poll() is None, simulator.output()
                time.sleep(0.1)
            paired = subprocess.run(
                [sys.executable, "manage.py", "pair_device", found.group(1)],
                cwd=ROOT,
                env=live_env,
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert paired.returncode == 0, paired.stderr
            assert f"Device {MAC} bound" in paired.stdout
            # The firmware polls every 3 s: connected within a few.
            deadline = time.monotonic() + 20
            while "Connected as" not in simulator.output():
                assert time.monotonic() < deadline and simulator.proc.poll() is None, simulator.output()
                time.sleep(0.1)
            assert "Configured by the hub: ws://127.0.0.1:" in simulator.output()
        finally:
            simulator.stop()
    assert Agent.objects.get(agent_id=MAC).connects_on_demand
