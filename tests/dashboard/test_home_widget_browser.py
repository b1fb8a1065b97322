"""The home inside the LLM's window (issue 28), end to end in a real headless Chromium: a
host page written to the MCP Apps specification (`mcp_apps_host.html`, served at an origin of
its own that the hub allows) connects to a live hub over Streamable HTTP with a token, finds
`show_home`'s view, renders it sandboxed under the extension's strictest default CSP, and
relays the view's `tools/call`. The view shows the rooms and the alarm, switches a light (the
hub's light really changes), follows a change made elsewhere while open, and a disarm from it
waits for the owner's approval on the hub like every token's dangerous call.

Screenshots land in artifacts/screenshots/ (CI keeps them)."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from django.utils import timezone

from audit.models import Event
from automations.services import map_zone
from devices.home import selectors, services
from devices.home.models import Light
from devices.telemetry.models import TelemetryReading
from tests.dashboard.test_dashboard_browser import SHOTS, browser, csp_violations  # noqa: F401 (fixtures)
from tests.hub_support import running_hub
from tests.mcp_endpoint.test_browser_clients import site
from tests.mcp_endpoint.test_confirmation_live import answer_on_the_dashboard, owner, sdk_call  # noqa: F401
from tests.mqtt_support import wait_until
from tests.telemetry_support import store_readings

pytestmark = [pytest.mark.browser, pytest.mark.live]
HOST_PAGE = (Path(__file__).with_name("mcp_apps_host.html")).read_bytes()


@pytest.fixture
def host_site() -> Iterator[str]:
    """The host's own origin (a loopback address other than the hub's)."""
    with site("127.0.0.3", HOST_PAGE) as origin:
        yield origin


@pytest.fixture
def hub(live_env, host_site, owner):  # noqa: F811
    with running_hub(live_env, MCP_ALLOWED_ORIGINS=host_site, MCP_RATE_LIMIT="0") as process:
        yield process.base


def open_host(browser, host_site: str, hub: str, token: str, *, locale: str, **context):  # noqa: F811
    page = browser.new_context(**context).new_page()
    violations = csp_violations(page)
    page.goto(host_site + "/")
    started = page.evaluate("start", {"hub": hub, "token": token, "locale": locale})
    return page, page.frame_locator("#view"), started, violations


def test_the_view_switches_a_light_follows_the_home_waits_for_the_owner_and_speaks_spanish(
    browser,  # noqa: F811
    host_site,
    hub,
    make_token,
):
    services.set_alarm_state(True, actor="test", interface="system")
    map_zone("living", "Salón", actor="test", interface="system")
    store_readings(
        [
            TelemetryReading(
                zone="living",
                device_type="soms",
                device_id="1",
                channel="temperature",
                value=21.64,
                unit="c",
                measured_at=timezone.now(),
            )
        ]
    )
    token = make_token(("read", "control"), name="assistant")
    page, view, started, violations = open_host(browser, host_site, hub, token, locale="en-US")
    assert started["tool"] == "show_home" and started["size"] < 300_000
    assert started["capabilities"]["extensions"]["io.modelcontextprotocol/ui"]["mimeTypes"] == [
        "text/html;profile=mcp-app"
    ]

    kitchen = view.get_by_role("switch", name="Cocina")
    kitchen.wait_for()
    assert kitchen.get_attribute("aria-checked") == "false"
    assert view.locator("#alarm-state").inner_text() == "Armed"
    living_room = view.get_by_role("region", name="Salón")
    assert "Temperature" in living_room.inner_text() and "21.6 °C" in living_room.inner_text()

    kitchen.click()  # through the host's bridge to the hub's tools/call
    wait_until(lambda: kitchen.get_attribute("aria-checked") == "true")
    assert Light.objects.get(name="cocina").on is True
    assert Event.objects.filter(action="light.set", actor="assistant").exists()

    # A change made elsewhere (another client, from a thread of its own: Playwright holds
    # this one's event loop) shows while the view is open.
    with ThreadPoolExecutor(1) as other_client:
        other_client.submit(sdk_call, hub, token, "set_light_state", {"name": "salon", "on": True}).result()
    salon = view.get_by_role("switch", name="Salón")
    wait_until(lambda: salon.get_attribute("aria-checked") == "true")
    page.screenshot(path=str(SHOTS / "mcp-app-home.png"), full_page=True)

    # Disarming from the view is a token's dangerous call: it waits for the owner on the hub.
    view.get_by_role("button", name="Disarm").click()
    wait_until(lambda: "owner's approval" in view.locator("#status").inner_text())
    assert selectors.get_alarm_status()["armed"] is True
    with ThreadPoolExecutor(1) as owner_browser:
        owner_browser.submit(answer_on_the_dashboard, hub, "approve").result()
    wait_until(lambda: view.locator("#alarm-state").inner_text() == "Disarmed")
    assert selectors.get_alarm_status()["armed"] is False

    said = [entry["method"] for entry in page.evaluate("window.hostLog")]
    assert said[:2] == ["ui/initialize", "ui/notifications/initialized"]
    assert "tools/call" in said and "ui/notifications/size-changed" in said
    init = page.evaluate("window.hostLog[0].params")
    assert init["protocolVersion"] == "2026-01-26" and init["appInfo"]["name"]
    assert violations == []  # nothing outside the view's own document, under the strictest CSP

    # On a phone, in the host's language (Spanish), for a token that may only read: a switch
    # is refused by the hub, the view says so, and nothing changes.
    reader = make_token(("read",), name="reader")
    phone, view, _started, violations = open_host(
        browser, host_site, hub, reader, locale="es-GT", viewport={"width": 390, "height": 844}
    )
    kitchen = view.get_by_role("switch", name="Cocina")
    kitchen.wait_for()
    assert view.locator("#alarm-state").inner_text() == "Desarmada"
    assert view.get_by_role("button", name="Armar").is_visible()
    kitchen.click()
    wait_until(lambda: "No se hizo" in view.locator("#status").inner_text())
    assert "control" in view.locator("#status").inner_text()  # the hub's own refusal, naming the scope
    assert Light.objects.get(name="cocina").on is True
    phone.screenshot(path=str(SHOTS / "mcp-app-home-phone-es.png"), full_page=True)
    assert violations == []
