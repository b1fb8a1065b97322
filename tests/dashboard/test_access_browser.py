"""The Access page and dark mode in a real browser (Debian's Chromium through Playwright,
against a real daphne): an owner creates a token, sees its secret once, the token opens /mcp,
the page never shows it again, and a Revoke there closes /mcp to it at once; a system in dark
mode gets the dashboard dark. No Content-Security-Policy violation anywhere. Screenshots land
in artifacts/screenshots/."""

from __future__ import annotations

import threading

import httpx
import pytest

from tests.dashboard.test_dashboard_browser import (  # noqa: F401 (fixtures)
    SHOTS,
    browser,
    csp_violations,
    fel_env,
    log_in,
    mcp_call,
    owner,
)

pytestmark = [pytest.mark.browser, pytest.mark.live]


def _refused(base: str, secret: str) -> bool:
    response = httpx.post(
        base + "/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
        headers={"authorization": f"Bearer {secret}", "accept": "application/json, text/event-stream"},
        timeout=10,
    )
    return response.status_code == 401


def test_create_a_token_see_it_once_use_it_and_revoke_it(daphne_server, owner, browser):  # noqa: F811
    base = daphne_server
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    violations = csp_violations(page)
    log_in(page, base)
    page.get_by_role("link", name="Access").click()
    page.get_by_label("Name (who or what it is for; shown in the activity)").fill("Kitchen tablet")
    page.locator("#add-token").get_by_label("control").check()
    page.get_by_label("Expires").select_option("30")
    page.get_by_role("button", name="Create the token").click()
    secret = page.locator("#token-secret").input_value()
    assert secret.startswith("hh_")
    assert "it is not shown again" in page.locator("#new-token").inner_text()
    page.screenshot(path=str(SHOTS / "access-token-created.png"), full_page=True)

    mcp_call(base, secret, "set_light_state", {"name": "cocina", "on": True})  # the token works
    page.goto(base + "/access/")
    row = page.locator("#tokens tr", has_text="Kitchen tablet")
    assert "read, control" in row.inner_text() and "ago" in row.inner_text()  # its scopes, its last use
    assert page.locator("#token-secret").count() == 0 and secret not in page.content()
    page.screenshot(path=str(SHOTS / "access.png"), full_page=True)

    row.get_by_role("button", name="Revoke").click()
    page.wait_for_selector("text=Token 'Kitchen tablet' is revoked")
    assert page.locator("#tokens tr", has_text="Kitchen tablet").count() == 0
    assert _refused(base, secret)  # at once, on /mcp
    assert violations == []
    context.close()


def test_dark_mode_follows_the_system(daphne_server, owner, browser):  # noqa: F811
    base = daphne_server
    context = browser.new_context(viewport={"width": 1280, "height": 900}, color_scheme="dark")
    page = context.new_page()
    violations = csp_violations(page)
    log_in(page, base)
    for url, shot in (("/", "dark-home.png"), ("/access/", "dark-access.png")):
        page.goto(base + url)
        background, card, ink = page.evaluate(
            "[getComputedStyle(document.body).backgroundColor,"
            " getComputedStyle(document.querySelector('.card')).backgroundColor,"
            " getComputedStyle(document.body).color]"
        )
        assert _luminance(background) < 0.1 and _luminance(card) < 0.2, (background, card)
        assert _luminance(ink) > 0.7, ink
        page.screenshot(path=str(SHOTS / shot), full_page=True)
    page.emulate_media(color_scheme="light")
    assert _luminance(page.evaluate("getComputedStyle(document.body).backgroundColor")) > 0.8
    assert violations == []
    context.close()


def _luminance(rgb: str) -> float:
    """0 (black) to 1 (white) for a computed `rgb(r, g, b)` colour."""
    red, green, blue = (int(part) for part in rgb[rgb.index("(") + 1 : rgb.index(")")].split(",")[:3])
    return (0.2126 * red + 0.7152 * green + 0.0722 * blue) / 255


def test_an_invoice_pdf_is_viewed_in_the_browser(fel_env, daphne_server, owner, browser):  # noqa: F811
    """ "View" opens the PDF in a new tab as a document of its own (a download leaves no document), and the
    hub's Content-Security-Policy lets Chromium show it."""
    from django.db import connection

    from fel import services
    from fel.models import Invoice
    from tests.fel_support import REAL

    def render():  # in a thread of its own: this one runs Playwright's event loop
        services.render_xml(str(fel_env / "xml" / REAL[0].name), actor="maria", interface="dashboard")
        connection.close()

    worker = threading.Thread(target=render)
    worker.start()
    worker.join()
    invoice = Invoice.objects.get()
    base = daphne_server
    context = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
    page = context.new_page()
    log_in(page, base)
    page.goto(base + "/invoices/")
    blocked: list[str] = []
    context.on(
        "console", lambda message: "Content Security Policy" in message.text and blocked.append(message.text)
    )
    with context.expect_page() as opened:
        page.get_by_role("link", name=f"View PDF of {invoice.serie}-{invoice.numero}").click()
    viewer = opened.value
    viewer.wait_for_load_state()
    viewer.wait_for_timeout(1000)  # time for the viewer to load, or a download to take the tab
    assert viewer.url == f"{base}/invoices/{invoice.pk}/pdf/view/"  # a document, not a download
    assert blocked == []
    viewer.screenshot(path=str(SHOTS / "invoice-pdf-view.png"))
    context.close()
