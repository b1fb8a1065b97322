"""An owner writes an automation in a real browser (Debian's Chromium, through Playwright): the
editor shows only the chosen kind's fields, the dry run shows the recorded past's firing, the
automation is saved and then enabled with the list's switch; no CSP violation on the way."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from audit.models import Event
from automations.models import Automation
from devices.home import services as home_services
from tests.dashboard.test_dashboard_browser import browser, csp_violations, log_in, owner  # noqa: F401 (fixtures)

pytestmark = [pytest.mark.browser, pytest.mark.live]


def test_an_owner_writes_dry_runs_and_enables_an_automation(daphne_server, owner, browser):  # noqa: F811
    home_services.set_light_state("salon", True, actor="ana", interface="dashboard")
    Event.objects.filter(pk=Event.objects.latest("id").pk).update(at=timezone.now() - timedelta(hours=3))
    base = daphne_server
    page = browser.new_context().new_page()
    violations = csp_violations(page)
    log_in(page, base)

    page.goto(base + "/automations/")
    page.get_by_role("link", name="New automation").click()
    page.get_by_label("Name", exact=True).fill("Cocina follows salon")
    assert page.get_by_label("Light", exact=True).is_visible()
    assert not page.get_by_label("Zone", exact=True).is_visible()  # another kind's fields are hidden
    page.get_by_label("Light", exact=True).fill("salon")
    page.locator("#a-action-0-kind").select_option("tool")
    assert not page.locator("#a-action-0-scene").is_visible()
    page.locator("#a-action-0-tool").fill("set_light_state")
    page.locator("#a-action-0-arguments").fill('{"name": "cocina", "on": true}')

    page.get_by_role("button", name="Dry run").click()
    page.wait_for_selector("#dry-run")
    assert "Dry run: 1 firing" in page.locator("#dry-run").inner_text()
    assert "would call set_light_state" in page.locator("#dry-run").inner_text()
    assert not Automation.objects.exists()

    page.get_by_role("button", name="Save").click()
    page.wait_for_url("**/automations/automation/?name=*")
    assert "Version 1, disabled" in page.locator("h2#automation-h").inner_text()
    page.goto(base + "/automations/")
    switch = page.locator('[data-automation-switch="Cocina follows salon"]')
    assert switch.get_attribute("aria-checked") == "false"
    switch.click()
    page.wait_for_selector('[data-automation-switch="Cocina follows salon"][aria-checked="true"]')
    row = Automation.objects.get()
    assert row.enabled and row.enabled_by.get_username() == "maria"
    assert violations == []
