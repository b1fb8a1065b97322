"""A notification seen live in a real browser (Debian's Chromium, through Playwright): the
banner appears on an open page without a reload, the owner dismisses it on the Notifications
page, and the banner leaves the other page, again without a reload; no CSP violation."""

from __future__ import annotations

import pytest

from automations.notifications import services
from tests.dashboard.test_dashboard_browser import browser, csp_violations, log_in, owner  # noqa: F401 (fixtures)

pytestmark = [pytest.mark.browser, pytest.mark.live]
BANNER = "#notifications-banner .banner"


def test_a_notification_shows_live_and_is_dismissed_in_the_browser(daphne_server, owner, browser):  # noqa: F811
    base = daphne_server
    context = browser.new_context()
    home = context.new_page()
    home_violations = csp_violations(home)
    log_in(home, base)
    home.wait_for_function("() => document.body.dataset.socket === 'up'")
    home.evaluate("window.notReloaded = true")
    assert home.locator(BANNER).count() == 0

    services.notify("CO2 above 1000 ppm in the salon", title="Air", source="automation")

    home.wait_for_selector(BANNER, timeout=10_000)
    assert "1 unread notification." in home.locator(BANNER).inner_text()
    listing = context.new_page()
    listing_violations = csp_violations(listing)
    listing.goto(base + "/notifications/")
    assert "CO2 above 1000 ppm in the salon" in listing.locator("#notifications-unread").inner_text()
    listing.get_by_role("button", name="Dismiss", exact=True).click()
    listing.wait_for_load_state()
    assert "Nothing new." in listing.locator("#notifications-unread").inner_text()
    assert "maria" in listing.locator("#notifications-read").inner_text()
    home.wait_for_selector(BANNER, state="detached", timeout=10_000)
    assert home.evaluate("window.notReloaded") is True
    assert home_violations == listing_violations == []
    context.close()
