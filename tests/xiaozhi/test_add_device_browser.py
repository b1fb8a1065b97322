"""In a real headless Chromium against a real daphne: a stock xiaozhi device (the simulator, doing
the firmware's OTA exchange) shows a code, the owner types it in "Add a device", the device
connects, then hangs up (the page says it connects when spoken to), and the owner unbinds it.
Screenshots land in artifacts/screenshots/ (devices-xiaozhi-*.png)."""

from __future__ import annotations

import asyncio
import queue
import threading

import pytest

from devices.agents.models import Agent, AgentTool
from devices.xiaozhi.simulator import SimulatedDevice
from tests.dashboard.test_dashboard_browser import (  # noqa: F401 (fixtures)
    ARGS,
    CHROMIUM,
    SHOTS,
    browser,
    log_in,
    owner,
    wait_until,
)

pytestmark = [pytest.mark.browser, pytest.mark.live]
MAC = "d8:3b:da:7a:00:02"


class DeviceThread(threading.Thread):
    """The simulated device on an event loop of its own: onboard, connect, stay until told."""

    def __init__(self, base: str) -> None:
        super().__init__(daemon=True)
        self.codes: queue.Queue[str] = queue.Queue()
        self.device = SimulatedDevice(
            "", MAC, "", ota_url=base + "/xiaozhi/ota/", poll_seconds=0.2, on_code=self._shown
        )
        self.connected = threading.Event()
        self.hang_up = threading.Event()

    def _shown(self, code: str, message: str) -> None:
        self.codes.put(code)

    def run(self) -> None:
        asyncio.run(self._live())

    async def _live(self) -> None:
        await self.device.onboard()
        await self.device.connect()
        self.connected.set()
        while not self.hang_up.is_set():
            await asyncio.sleep(0.05)
        await self.device.close()


def test_add_a_device_on_the_devices_page(daphne_server, owner, browser):  # noqa: F811
    base = daphne_server
    device = DeviceThread(base)
    device.start()
    code = device.codes.get(timeout=10)

    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    log_in(page, base)
    page.goto(base + "/devices/")
    assert f"{base}/xiaozhi/ota/" in page.content()
    page.get_by_label("Code the device shows").fill(code)
    page.get_by_label("Name").fill("Desk speaker")
    page.get_by_role("button", name="Add the device").click()
    page.wait_for_selector(f"text=Device {MAC} added")
    assert device.connected.wait(10)
    assert wait_until(lambda: AgentTool.objects.filter(agent__agent_id=MAC, available=True).exists(), 10)
    page.reload()
    page.wait_for_selector("text=Stock xiaozhi device (homehub-sim, firmware 1.9.0)")
    page.wait_for_selector("text=self.audio_speaker.set_volume")
    page.screenshot(path=str(SHOTS / "devices-xiaozhi-online.png"), full_page=True)

    device.hang_up.set()  # the conversation ended
    device.join(10)
    assert wait_until(lambda: not Agent.objects.get(agent_id=MAC).online, 10)
    page.reload()
    page.wait_for_selector("text=Connects when spoken to")
    page.screenshot(path=str(SHOTS / "devices-xiaozhi-on-demand.png"), full_page=True)

    page.get_by_text("Unbind…").click()  # a confirm step, no script needed
    page.screenshot(path=str(SHOTS / "devices-xiaozhi-unbind-confirm.png"), full_page=True)
    page.get_by_role("button", name="Yes, unbind it").click()
    page.wait_for_selector(f"text=Device {MAC} unbound")
    assert page.get_by_role("button", name="Yes, unbind it").count() == 0
    assert "Connects when spoken to" not in page.content() and "Offline" in page.content()
    page.screenshot(path=str(SHOTS / "devices-xiaozhi-unbound.png"), full_page=True)
    context.close()
