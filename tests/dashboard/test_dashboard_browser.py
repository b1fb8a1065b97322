"""End to end in a real headless Chromium (Debian's, driven by Playwright for Python)
against a real daphne: log in, switch a light, see an MCP change arrive live, arm and
disarm the alarm, lose and regain the live socket, upload an invoice and download its PDF.

Screenshots of every page land in artifacts/screenshots/ (CI keeps them)."""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from datetime import timedelta
from pathlib import Path

import httpx
import pytest

from tests.hub_support import create_account

CHROMIUM = "/usr/bin/chromium"
SHOTS = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]
PASSWORD = "correct-horse-battery-staple"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.live,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's chromium is not installed"),
]


@pytest.fixture
def browser(monkeypatch):
    from playwright.sync_api import sync_playwright

    # Playwright's sync API keeps an event loop in this thread; the ORM calls the tests make
    # between browser steps are plain synchronous ones.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        yield browser
        browser.close()


@pytest.fixture
def owner(live_env, django_user_model):
    return create_account("maria", PASSWORD)


def log_in(page, base):
    page.goto(base + "/")
    assert "/login/" in page.url
    page.get_by_label("Username").fill("maria")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(base + "/")


def csp_violations(page) -> list[str]:
    """What Chromium reports `page` broke of the Content-Security-Policy from now on (a script,
    style or request the policy blocked), as its console says it."""
    found: list[str] = []
    page.on(
        "console", lambda message: "Content Security Policy" in message.text and found.append(message.text)
    )
    return found


def wait_until(predicate, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def mcp_call(base, token, name, arguments):
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": name,
            "arguments": arguments,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    }
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "authorization": f"Bearer {token}",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": name,
    }
    response = httpx.post(base + "/mcp", content=json.dumps(body), headers=headers, timeout=10)
    assert response.status_code == 200, response.text
    return response


def seed_telemetry_and_agent():
    from django.utils import timezone

    from devices.agents.models import Agent, AgentTool
    from devices.telemetry.models import TelemetryReading
    from tests.telemetry_support import store_readings

    now = timezone.now()
    readings = []
    for i in range(7 * 24 * 4):  # a week, every 15 minutes
        at = now - timedelta(minutes=15 * i)
        hour = at.hour + at.minute / 60
        readings.append(
            TelemetryReading(
                zone="salon",
                device_type="sensor",
                device_id="esp32-salon",
                channel="temperature",
                value=round(21 + 3 * ((hour - 4) % 24) / 24, 2),
                unit="°C",
                measured_at=at,
            )
        )
        if i % 4 == 0:
            readings.append(
                TelemetryReading(
                    zone="cocina",
                    device_type="sensor",
                    device_id="esp32-cocina",
                    channel="humidity",
                    value=50 + (i % 9),
                    unit="%",
                    measured_at=at,
                )
            )
    readings.append(
        TelemetryReading(
            zone="garage",
            device_type="sensor",
            device_id="esp32-garage",
            channel="co2",
            value=612,
            unit="ppm",
            measured_at=now,
        )
    )
    store_readings(readings)
    speaker = Agent.objects.create(
        agent_id="esp32-speaker", name="Living-room speaker", online=True, approved=True, last_seen=now
    )
    AgentTool.objects.create(
        agent=speaker,
        name="self.audio_speaker.set_volume",
        description="Set the speaker volume",
        input_schema={
            "type": "object",
            "properties": {
                "volume": {"type": "integer", "minimum": 0, "maximum": 100, "description": "0 to 100"}
            },
            "required": ["volume"],
        },
    )
    AgentTool.objects.create(
        agent=speaker,
        name="self.get_device_status",
        description="Battery, network, volume",
        input_schema={"type": "object", "properties": {}},
    )
    Agent.objects.create(
        agent_id="mqtt-garage",
        name="Garage sensors",
        transport="mqtt",
        approved=True,
        online=False,
        last_seen=now - timedelta(hours=3),
    )
    # rooms: the zones and the garage's board in theirs, and a scene on Home
    from automations import services as rooms

    for zone, room in (("salon", "Salón"), ("cocina", "Cocina"), ("garage", "Garage")):
        rooms.map_zone(zone, room, actor="test", interface="system")
    rooms.place_agent("mqtt-garage", "Garage", actor="test", interface="system")
    rooms.save_scene("Cena", {"salon": True, "cocina": True}, actor="test", interface="system")


def test_home_live_alarm_and_every_page(daphne_server, owner, browser, make_token):
    from audit.models import Event
    from devices.home.models import Alarm, Light

    base = daphne_server
    seed_telemetry_and_agent()
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    violations = csp_violations(page)
    page.goto(base + "/login/")
    page.screenshot(path=str(SHOTS / "login.png"))
    log_in(page, base)
    page.wait_for_function("() => document.body.dataset.socket === 'up'")

    # Switch a light from the page: stored, audited as the dashboard's user.
    salon = page.locator('[data-light="salon"]')
    assert salon.get_attribute("aria-checked") == "false"
    salon.click()
    assert wait_until(lambda: Light.objects.get(name="salon").on)
    page.wait_for_function(
        "() => document.querySelector('[data-light=salon]').getAttribute('aria-checked') === 'true'"
    )
    event = Event.objects.filter(action="light.set").first()
    assert (event.interface, event.actor) == ("dashboard", "maria")

    # A change made by an LLM agent over MCP appears without a reload, within a second.
    token = make_token(name="claude")
    started = time.monotonic()
    mcp_call(base, token, "set_light_state", {"name": "cocina", "on": True})
    page.wait_for_function(
        "() => document.querySelector('[data-light=cocina]').getAttribute('aria-checked') === 'true'",
        timeout=1000,
    )
    assert time.monotonic() - started < 1.5

    # Arm, then disarm through the confirmation dialog.
    page.get_by_role("button", name="Arm", exact=True).click()
    assert wait_until(lambda: Alarm.objects.get().armed)
    page.wait_for_function("() => document.querySelector('[data-alarm]').dataset.alarm === 'armed'")
    page.screenshot(path=str(SHOTS / "home.png"), full_page=True)
    page.get_by_role("button", name="Disarm…").click()
    dialog = page.get_by_role("dialog")
    dialog.wait_for()
    page.screenshot(path=str(SHOTS / "home-disarm-dialog.png"))
    assert Alarm.objects.get().armed  # nothing happens before confirming
    dialog.get_by_role("button", name="Yes, disarm").click()
    assert wait_until(lambda: not Alarm.objects.get().armed)
    page.wait_for_function("() => document.querySelector('[data-alarm]').dataset.alarm === 'disarmed'")
    assert Event.objects.filter(action="alarm.set", interface="dashboard", actor="maria").count() == 2

    # The live socket drops: the page says so, reconnects, and catches up.
    page.evaluate("window.homehubSocket.close()")
    page.wait_for_selector("#live-banner", state="visible")
    page.screenshot(path=str(SHOTS / "home-reconnecting.png"))
    page.wait_for_function("() => document.body.dataset.socket === 'up'", timeout=10000)
    assert page.locator("#live-banner").is_hidden()
    mcp_call(base, token, "set_light_state", {"name": "dormitorio", "on": True})
    switched = (
        "() => document.querySelector('[data-light=dormitorio]').getAttribute('aria-checked') === 'true'"
    )
    page.wait_for_function(switched, timeout=1000)

    # Every other page.
    page.goto(base + "/sensors/")
    page.screenshot(path=str(SHOTS / "sensors.png"), full_page=True)
    page.get_by_role("link", name="Temperature").first.click()
    page.wait_for_selector("svg.chart polyline")
    for range_name in ["hour", "day", "week"]:
        page.get_by_role("link", name=range_name.capitalize(), exact=True).click()
        page.wait_for_url(f"**range={range_name}")
        page.wait_for_selector("svg.chart polyline")
        page.screenshot(path=str(SHOTS / f"sensor-{range_name}.png"), full_page=True)
    page.goto(base + "/devices/")
    page.get_by_text("self.audio_speaker.set_volume", exact=True).click()
    page.get_by_label("Volume").fill("40")
    page.screenshot(path=str(SHOTS / "devices.png"), full_page=True)
    page.goto(base + "/activity/")
    page.screenshot(path=str(SHOTS / "activity.png"), full_page=True)
    page.get_by_label("Through").select_option("mcp-http")
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url("**interface=mcp-http**")
    assert "set_light_state" in page.content() or "light.set" in page.content()
    page.goto(base + "/scenes/")
    page.screenshot(path=str(SHOTS / "scenes.png"), full_page=True)
    page.goto(base + "/")
    Light.objects.update(on=False)
    page.get_by_role("button", name="Cena").click()  # a scene, one click from Home
    page.wait_for_url(base + "/")
    assert set(Light.objects.filter(on=True).values_list("name", flat=True)) == {"salon", "cocina"}
    assert violations == []  # the policy blocked nothing of the pages, the live socket included

    context.close()


@pytest.fixture
def fel_env(live_env, tmp_path, settings):
    """FEL_ROOT in tmp for both the test process and the daphne it starts."""
    from tests.fel_support import make_root

    root = make_root(tmp_path, settings)
    live_env["FEL_ROOT"] = str(root)
    live_env["FEL_BATCH_WORKERS"] = "1"
    return root


def test_upload_a_batch_watch_it_reload_and_download(
    fel_env, daphne_server, tasks_worker, owner, browser, tmp_path
):
    from fel.models import BatchJob, Invoice
    from tests.fel_support import BROKEN, LONG_SAMPLE, REAL

    base = daphne_server
    context = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
    page = context.new_page()
    log_in(page, base)
    page.goto(base + "/invoices/")
    uploads = tmp_path / "to-upload"
    uploads.mkdir()
    for file in [*REAL, *BROKEN[:2]]:
        shutil.copy(file, uploads / file.name)
    for i in range(24):  # long invoices, so the batch runs long enough to be watched
        shutil.copy(LONG_SAMPLE, uploads / f"larga-{i:02}.xml")
    (uploads / "vacia.xml").write_bytes(b"")
    names = sorted(p.name for p in uploads.iterdir())
    page.get_by_label("XML files (one or many)").set_input_files([str(uploads / n) for n in names])
    page.get_by_role("button", name="Validate and render").click()

    # The batch runs on the server; the page shows its progress as files finish.
    panel = page.locator("#last-batch [data-batch]")
    page.wait_for_function(
        "() => (document.querySelector('#last-batch progress') || {}).value > 0", timeout=30000
    )
    assert panel.get_attribute("data-state") in {"running", "done"}
    page.screenshot(path=str(SHOTS / "invoices-batch-running.png"), full_page=True)

    # A reload finds the batch again, still live.
    page.reload()
    page.wait_for_function(
        "() => document.querySelector('#last-batch [data-batch]').dataset.state === 'done'", timeout=60000
    )
    status = page.locator("#last-batch .batch-status").text_content()
    assert status == f"Done: {len(names)} files, {len(names) - 3} valid, 3 with issues."
    assert page.locator("#last-batch .result").count() == len(names)
    assert page.locator("#last-batch .result.bad").count() == 3
    assert "could not be read" in page.locator("#last-batch .result", has_text="vacia.xml").text_content()
    job = BatchJob.objects.get()
    assert (job.state, job.total, job.invalid) == ("done", len(names), 3)
    page.wait_for_selector("#invoice-list tbody tr")
    assert Invoice.objects.filter(valid=True).count() == len(REAL)
    page.screenshot(path=str(SHOTS / "invoices.png"), full_page=True)

    with page.expect_download() as info:
        page.get_by_role("link", name="Download all (ZIP)").click()
    assert Path(info.value.path()).read_bytes().startswith(b"PK")
    page.get_by_text(f"{len(names) - 3} valid files").click()  # folded under the problems
    with page.expect_download() as info:
        page.locator("#last-batch .result", has_text=REAL[0].name).get_by_role("link", name="PDF").click()
    assert Path(info.value.path()).read_bytes().startswith(b"%PDF")
    with page.expect_download() as info:
        page.get_by_role("link", name="manifest.json").click()
    manifest = json.loads(Path(info.value.path()).read_text())
    assert manifest["count"] == len(names) and manifest["invalid"] == 3

    page.goto(f"{base}/invoices/batches/{job.pk}/")
    page.screenshot(path=str(SHOTS / "invoice-batch.png"), full_page=True)
    context.close()


PHONE_PAGES = {
    "home": "/",
    "sensors": "/sensors/",
    "sensor-day": "/sensors/salon/sensor/esp32-salon/temperature/?range=day",
    "devices": "/devices/",
    "invoices": "/invoices/",
    "invoice-batch": "/invoices/batches/{job}/",
    "activity": "/activity/",
    "confirm-disarm": "/alarm/",
    "access": "/access/",
    "requests": "/requests/",
    "automations": "/automations/",
    "automation-editor": "/automations/edit/",
}


def test_every_page_fits_a_phone(fel_env, daphne_server, owner, browser):
    """At 375 px no page scrolls sideways, and each one is screenshot there and on a desktop."""
    from django.db import connection

    from fel import batch_jobs, services
    from fel.models import BatchJob
    from tests.fel_support import BROKEN, REAL

    base = daphne_server
    seed_telemetry_and_agent()

    def record_invoices():  # in a thread of its own: this one runs Playwright's event loop
        services.validate_xml(str(fel_env / "xml" / REAL[0].name), actor="maria", interface="dashboard")
        uploads = [_Upload(p) for p in [*REAL[:3], BROKEN[0]]]
        job = batch_jobs.create_job(uploads, actor="maria", interface="dashboard")
        batch_jobs.run_job(job.pk, task_id="test")
        connection.close()

    worker = threading.Thread(target=record_invoices)
    worker.start()
    worker.join()
    job = BatchJob.objects.get()
    sizes = {
        "phone": {"viewport": {"width": 375, "height": 812}, "device_scale_factor": 2, "is_mobile": True},
        "desktop": {"viewport": {"width": 1280, "height": 900}},
    }
    for size, options in sizes.items():
        context = browser.new_context(**options)
        page = context.new_page()
        violations = csp_violations(page)
        page.goto(base + "/login/")
        page.screenshot(path=str(SHOTS / f"{size}-login.png"), full_page=True)
        log_in(page, base)
        for name, url in PHONE_PAGES.items():
            page.goto(base + url.format(job=job.pk))
            page.wait_for_load_state("networkidle")
            page.screenshot(path=str(SHOTS / f"{size}-{name}.png"), full_page=True)
            page_width, inner, nav, nav_box = page.evaluate(
                "[document.scrollingElement.scrollWidth, window.innerWidth,"
                " document.querySelector('.topbar nav').scrollWidth,"
                " document.querySelector('.topbar nav').clientWidth]"
            )
            assert inner == options["viewport"]["width"]  # a phone did not zoom out to fit
            assert page_width <= inner, f"{url} scrolls sideways at {size} size"
            assert nav <= nav_box, f"the menu of {url} hides sections at {size} size"
        assert violations == [], f"the Content-Security-Policy blocked something at {size} size"
        context.close()


class _Upload:
    def __init__(self, path: Path) -> None:
        self.name, self.path = path.name, path

    def chunks(self):
        yield self.path.read_bytes()


ADMIN_PAGES = ["/admin/", "/admin/auth/user/", "/admin/auth/user/add/", "/admin/home/light/"]


def test_the_admin_and_the_api_docs_work_under_the_content_security_policy(
    daphne_server, browser, django_user_model
):
    """The policy (no inline script or style) is on every page and breaks neither the admin nor
    the API docs: each page draws, and Chromium reports no violation."""
    base = daphne_server
    django_user_model.objects.create_superuser("root", "root@example.com", PASSWORD)
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    violations = csp_violations(page)
    page.goto(base + "/admin/login/")
    page.get_by_label("Username").fill("root")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(base + "/admin/")
    for url in ADMIN_PAGES:
        response = page.goto(base + url)
        assert response.status == 200, url
        assert "script-src 'self'" in response.headers["content-security-policy"]
        page.wait_for_load_state("networkidle")
    page.get_by_role("link", name="Add", exact=True).first.click()  # the admin's scripts run
    docs = page.goto(base + "/api/docs")
    assert "frame-ancestors 'none'" in docs.headers["content-security-policy"]
    page.wait_for_selector(".swagger-ui .opblock", timeout=10_000)  # Swagger UI drew the operations
    page.screenshot(path=str(SHOTS / "api-docs.png"), full_page=False)
    assert violations == []
    context.close()
