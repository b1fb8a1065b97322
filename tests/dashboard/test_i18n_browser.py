"""The dashboard in Spanish in a real browser (Debian's Chromium through Playwright, against a
real daphne) at phone size: a browser set to Spanish gets the login page and the pages in Spanish,
the footer's switcher turns the account to English and the choice holds in a Spanish browser.
No Content-Security-Policy violation; screenshots land in artifacts/screenshots/."""

from __future__ import annotations

import pytest

from tests.dashboard.test_dashboard_browser import (  # noqa: F401 (fixtures)
    PASSWORD,
    SHOTS,
    browser,
    csp_violations,
    owner,
)

pytestmark = [pytest.mark.browser, pytest.mark.live]
PHONE = {"viewport": {"width": 375, "height": 812}, "device_scale_factor": 2, "is_mobile": True}


def test_a_spanish_phone_browses_in_spanish_and_switches_to_english(daphne_server, owner, browser):  # noqa: F811
    from dashboard.models import AccountLanguage

    base = daphne_server
    context = browser.new_context(locale="es-GT", **PHONE)
    page = context.new_page()
    violations = csp_violations(page)
    page.goto(base + "/")
    assert page.locator("html").get_attribute("lang") == "es"
    assert page.get_by_role("heading", name="Bienvenido a casa").is_visible()
    page.screenshot(path=str(SHOTS / "phone-es-login.png"), full_page=True)
    page.get_by_label("Usuario").fill("maria")
    page.get_by_label("Contraseña").fill(PASSWORD)
    page.get_by_role("button", name="Iniciar sesión").click()
    page.wait_for_url(base + "/")
    # The upload's words are the page's (app.js reads them from the label): a lost connection.
    page.goto(base + "/invoices/")
    page.route(
        "**/invoices/", lambda route: route.abort() if route.request.method == "POST" else route.continue_()
    )
    page.locator("#files").set_input_files([{"name": "a.xml", "mimeType": "text/xml", "buffer": b"<x/>"}])
    page.locator("#upload-form button[type=submit]").click()
    page.wait_for_function(
        "() => document.getElementById('upload-label').textContent"
        " === 'La subida falló: revise la conexión e intente de nuevo.'"
    )
    page.unroute("**/invoices/")
    for url, heading in [
        ("/scenes/", "Escenas"),
        ("/automations/", "Automatizaciones"),
        ("/devices/", "Dispositivos"),
    ]:
        page.goto(base + url)
        assert page.get_by_role("heading", name=heading, exact=True).is_visible()
        width, inner = page.evaluate("[document.scrollingElement.scrollWidth, window.innerWidth]")
        assert width <= inner, f"{url} scrolls sideways in Spanish at phone size"
        page.screenshot(path=str(SHOTS / f"phone-es-{url.strip('/')}.png"), full_page=True)

    page.get_by_label("Idioma").select_option("en")
    page.get_by_role("button", name="Cambiar").click()
    page.wait_for_url(base + "/devices/")
    assert page.get_by_role("heading", name="Devices", exact=True).is_visible()
    assert AccountLanguage.objects.get(user=owner).language == "en"
    context.close()

    again = browser.new_context(locale="es-GT", **PHONE)  # another Spanish phone, same account
    other = again.new_page()
    violations += csp_violations(other)
    other.goto(base + "/login/")
    other.get_by_label("Usuario").fill("maria")
    other.get_by_label("Contraseña").fill(PASSWORD)
    other.get_by_role("button", name="Iniciar sesión").click()
    other.wait_for_url(base + "/")
    other.goto(base + "/scenes/")
    assert other.get_by_role("heading", name="Scenes", exact=True).is_visible()
    again.close()
    assert violations == [], "the Content-Security-Policy blocked something"
