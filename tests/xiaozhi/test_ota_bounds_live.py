"""The OTA URL against a live hub, as a stranger on the network would use it: check-ins that
nobody will add cannot keep a real device from getting a code (codes waiting are bounded per
address and in all, the oldest expiring first), and once a device connected with its token, a
check-in replaying its MAC and Client-Id gets no token (it used to get a fresh one that
replaced the device's, within the hand-out window)."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.core.management import call_command
from django.utils import timezone

from devices.agents.services import admit_device
from devices.xiaozhi.models import Activation
from tests.devices_support import eventually, hub
from tests.xiaozhi.test_onboarding_live import online, stock_device, tools_of
from tests.xiaozhi_ota_support import system_info

pytestmark = pytest.mark.live
MAC = "d8:3b:da:7a:00:01"


def check_in_from(base: str, source: str, mac: str, client_id: str = "uuid-of-a-stranger") -> httpx.Response:
    """A check-in as stock firmware sends it, from the loopback address `source`."""
    headers = {
        "Device-Id": mac,
        "Client-Id": client_id,
        "Activation-Version": "1",
        "User-Agent": "bread-compact-wifi/1.6.2",
        "Content-Type": "application/json",
    }
    with httpx.Client(transport=httpx.HTTPTransport(local_address=source), timeout=10) as http:
        return http.post(
            base + "/xiaozhi/ota/", content=json.dumps(system_info(mac, client_id)), headers=headers
        )


def waiting():
    return Activation.objects.filter(expires_at__gt=timezone.now())


def test_strangers_check_ins_cannot_keep_a_real_device_from_a_code(live_env):
    limits = {"DEVICE_PENDING_ACTIVATIONS_MAX": "4", "DEVICE_PENDING_ACTIVATIONS_PER_ADDRESS": "2"}
    with hub(live_env, **limits) as base:
        for n in range(6):  # one address, as many devices as it likes: two codes wait
            assert check_in_from(base, "127.0.0.2", f"02:00:00:00:00:0{n}").status_code == 200
        assert waiting().filter(address="127.0.0.2").count() == 2
        for source in ("127.0.0.3", "127.0.0.4"):  # more addresses fill the hub's four
            for n in range(2):
                assert check_in_from(base, source, f"03:00:00:00:{source[-1]}:0{n}").status_code == 200
        real = check_in_from(base, "127.0.0.9", MAC, "uuid-of-the-real-device")
        assert real.status_code == 200, real.text
        code = real.json()["activation"]["code"]
        assert waiting().count() == 4 and waiting().filter(device_id=MAC, code=code).exists()
        call_command("pair_device", code)  # the owner types it
        assert Activation.objects.get(device_id=MAC).state == "bound"


def test_a_replayed_check_in_gets_no_token_once_the_device_connected(live_env):
    with hub(live_env) as base:

        async def scenario() -> tuple[str, str, httpx.Response]:
            device, codes = stock_device(base)
            onboarding = asyncio.ensure_future(device.onboard())
            code = await asyncio.wait_for(codes.get(), 10)
            await sync_to_async(call_command)("pair_device", code)
            await asyncio.wait_for(onboarding, 10)
            await device.connect()  # its first connection with the token it was handed
            await eventually(online)
            await eventually(tools_of)
            # Seconds later, well within the hand-out window: a stranger replays the check-in.
            replay = await sync_to_async(check_in_from)(base, "127.0.0.5", MAC, device.client_id)
            await device.close()
            return device.token, device.url, replay

        token, url, replay = async_to_sync(scenario)()
    assert replay.status_code == 200 and replay.json()["websocket"] == {"url": url}
    assert admit_device(MAC, token, accept_unknown=False) is not None  # the device's token stands
