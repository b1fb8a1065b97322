"""A dangerous call waiting for a person, seen live in a real browser (Debian's Chromium,
through Playwright): the banner appears on an open page and the request on an open Requests
page without a reload, the owner approves it there, the call goes through and the banner
leaves the other page, again without a reload."""

from __future__ import annotations

import threading

import pytest

from devices.home import selectors, services
from tests.dashboard.test_dashboard_browser import browser, csp_violations, log_in, owner  # noqa: F401 (fixtures)
from tests.mcp_endpoint.test_confirmation_live import sdk_call

pytestmark = [pytest.mark.browser, pytest.mark.live]
BANNER = "#requests-banner .banner"


def test_a_request_shows_live_and_is_approved_in_the_browser(daphne_server, owner, browser, make_token):  # noqa: F811
    base = daphne_server
    services.set_alarm_state(True, actor="test", interface="system")
    token = make_token(name="assistant")
    context = browser.new_context()
    home = context.new_page()
    home_violations = csp_violations(home)
    log_in(home, base)
    requests_page = context.new_page()
    requests_violations = csp_violations(requests_page)
    requests_page.goto(base + "/requests/")
    for page in (home, requests_page):
        page.wait_for_function("() => document.body.dataset.socket === 'up'")
        page.evaluate("window.notReloaded = true")
    assert home.locator(BANNER).count() == 0

    answer: dict = {}
    call = threading.Thread(
        target=lambda: answer.update(result=sdk_call(base, token, "set_alarm_state", {"armed": False}))
    )
    call.start()
    home.wait_for_selector(BANNER, timeout=10_000)
    assert "1 action waits for your approval" in home.locator(BANNER).inner_text()
    assert home.locator("#requests-count").inner_text() == "1"  # the navigation's count, live too
    approve = requests_page.get_by_role("button", name="Approve")
    approve.wait_for(timeout=10_000)
    assert (
        "assistant (through /mcp) asks to disarm the alarm"
        in requests_page.locator("#requests-open").inner_text()
    )
    assert requests_page.evaluate("window.notReloaded") is True
    approve.click()
    call.join(30)
    assert not answer["result"].is_error, answer["result"].content
    assert selectors.alarm()["armed"] is False
    home.wait_for_selector(BANNER, state="detached", timeout=10_000)
    home.wait_for_function("() => document.getElementById('requests-count').textContent === ''")
    assert home.evaluate("window.notReloaded") is True
    assert "Approved by maria" in requests_page.locator("#requests-recent").inner_text()
    assert home_violations == requests_violations == []
    context.close()
