"""The Devices page in a real headless Chromium against a real daphne, with a simulated ESP32
(xiaozhi firmware) connected: after a live update (a light switched through /mcp re-renders
the page's live region) a tool form still runs in place, without a reload, calling the device
once, and shows the result in plain words; without script, the form's POST is answered 303
and reloading the result calls nothing; once the device is gone its card says since when, and
the owner removes it after confirming. Screenshots: artifacts/screenshots/devices-*.png."""

from __future__ import annotations

import asyncio
import threading

import pytest

from devices.agents.models import Agent, AgentTool
from tests.dashboard.test_dashboard_browser import (  # noqa: F401 (fixtures)
    SHOTS,
    browser,
    csp_violations,
    log_in,
    mcp_call,
    owner,
    wait_until,
)
from tests.devices_support import new_device

pytestmark = [pytest.mark.browser, pytest.mark.live]
AGENT = "esp32-salon"
VOLUME = "self.audio_speaker.set_volume"
STATUS = "self.get_device_status"


class DeviceThread(threading.Thread):
    """The simulated device on an event loop of its own: connect, stay until told."""

    def __init__(self, base: str) -> None:
        super().__init__(daemon=True)
        self.device = new_device(base, AGENT)
        self.connected = threading.Event()
        self.hang_up = threading.Event()

    def run(self) -> None:
        asyncio.run(self._live())

    async def _live(self) -> None:
        await self.device.connect()
        self.connected.set()
        while not self.hang_up.is_set():
            await asyncio.sleep(0.05)
        await self.device.close()

    def calls(self) -> int:
        return sum(1 for m in list(self.device.received) if m.get("method") == "tools/call")


def run_tool(page, tool: str, **fields: str) -> None:
    page.get_by_text(tool, exact=True).click()  # the tool's <details>
    for label, value in fields.items():
        page.get_by_label(label).fill(value)
    page.get_by_role("button", name=f"Run {tool}").click()


def test_tool_forms_survive_live_updates_and_never_repeat_a_call(daphne_server, owner, browser, make_token):  # noqa: F811
    base = daphne_server
    device = DeviceThread(base)
    device.start()
    assert device.connected.wait(10)
    assert wait_until(
        lambda: AgentTool.objects.filter(agent__agent_id=AGENT, available=True).count() == 5, 10
    )
    token = make_token(scopes=("read", "control"))

    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    violations = csp_violations(page)
    log_in(page, base)
    page.goto(base + "/devices/")
    page.wait_for_selector("body[data-socket=up]")
    page.evaluate(
        "() => { window.notReloaded = true; document.getElementById('agent-list').dataset.before = '1'; }"
    )

    # A light switched elsewhere: the live region is re-rendered from a fresh copy.
    mcp_call(base, token, "set_light_state", {"name": "dormitorio", "on": True})
    page.wait_for_function("() => !document.getElementById('agent-list').dataset.before", timeout=5000)

    run_tool(page, VOLUME, Volume="40")
    result = page.locator(".tool-output .tool-result").first
    result.wait_for(timeout=10000)
    assert result.inner_text().strip().endswith("Done.") and "'content'" not in page.content()
    assert page.evaluate("() => window.notReloaded") is True  # in place, no reload
    assert device.device.state.volume == 40 and device.calls() == 1

    run_tool(page, STATUS)
    table = page.locator(f"#out-{AGENT.replace(':', '')}-selfget_device_status table.kv")
    table.wait_for(timeout=10000)
    assert "Audio speaker · volume" in table.inner_text() and "40" in table.inner_text()
    assert device.calls() == 2 and page.evaluate("() => window.notReloaded") is True
    # Another live update re-renders the region: what was open and shown stays.
    page.evaluate(
        "() => { document.activeElement.blur(); document.getElementById('agent-list').dataset.before = '1'; }"
    )
    mcp_call(base, token, "set_light_state", {"name": "dormitorio", "on": False})
    page.wait_for_function("() => !document.getElementById('agent-list').dataset.before", timeout=5000)
    assert "Audio speaker · volume" in table.inner_text(timeout=2000)
    assert page.get_by_label("Volume").input_value(timeout=2000) == "40"
    page.screenshot(path=str(SHOTS / "devices-tool-result.png"), full_page=True)
    phone = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    on_phone = phone.new_page()
    log_in(on_phone, base)
    on_phone.goto(base + "/devices/")
    run_tool(on_phone, STATUS)
    on_phone.locator(".tool-output table.kv").first.wait_for(timeout=10000)
    on_phone.screenshot(path=str(SHOTS / "devices-tool-result-phone.png"), full_page=True)
    phone.close()
    assert device.calls() == 3

    # Without script: POST, 303 to the page, the result shown once; a reload calls nothing.
    plain = browser.new_context(viewport={"width": 1280, "height": 900}, java_script_enabled=False)
    nojs = plain.new_page()
    answers: list[tuple[str, str, int]] = []
    nojs.on("response", lambda r: answers.append((r.request.method, r.url, r.status)))
    log_in(nojs, base)
    nojs.goto(base + "/devices/")
    run_tool(nojs, VOLUME, Volume="55")
    nojs.wait_for_selector("#call-result .tool-result")
    assert ("POST", base + "/devices/", 303) in answers
    assert nojs.url == base + "/devices/#call-result" and "Done." in nojs.inner_text("#call-result")
    assert device.device.state.volume == 55 and device.calls() == 4
    nojs.screenshot(path=str(SHOTS / "devices-no-script-result.png"), full_page=True)
    nojs.reload()
    assert nojs.locator("#call-result").count() == 0 and device.calls() == 4
    plain.close()

    # The device goes away: its card says since when; the owner removes it, confirming.
    device.hang_up.set()
    device.join(10)
    assert wait_until(lambda: not Agent.objects.get(agent_id=AGENT).online, 10)
    page.reload()
    page.wait_for_selector("text=Offline since")
    page.get_by_text("Remove this device…").click()
    page.screenshot(path=str(SHOTS / "devices-remove-confirm.png"), full_page=True)
    page.get_by_role("button", name="Yes, remove it").click()
    page.wait_for_selector(f"text=Device {AGENT} removed")
    assert not Agent.objects.filter(agent_id=AGENT).exists() and f'data-agent="{AGENT}"' not in page.content()
    assert violations == []
    context.close()
