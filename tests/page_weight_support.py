"""Issue 28's page budget, measured in a real Chromium: the bytes of script and style each
dashboard page loads, and Home's first paint. Shared by tests/dashboard/test_page_weight.py
(which asserts the budget) and bench/bench_pages.py (which reports first paint against its
target)."""

from __future__ import annotations

from typing import Any

BUDGET_BYTES = 300 * 1024  # no page over 300 KB of script and style (issue 28)
FIRST_PAINT_TARGET_MS = 1000.0  # Home's first paint on the demo: a target, reported, never asserted
# Every dashboard page an owner visits; a sensor's, an automation's and its editor are found
# from the links of the page before them.
PAGES = [
    "/",
    "/sensors/",
    "sensor-detail",
    "/devices/",
    "/scenes/",
    "/automations/",
    "automation-detail",
    "automation-edit",
    "/requests/",
    "/activity/",
    "/invoices/",
    "/notifications/",
    "/access/",
    "/accounts/",
]
INLINE = """() => [...document.querySelectorAll('script:not([src]), style')]
    .reduce((sum, el) => sum + new TextEncoder().encode(el.textContent).length, 0)"""
PAINT = """() => Object.fromEntries(performance.getEntriesByType('paint')
    .map(entry => [entry.name, entry.startTime]))"""


def uncached(context: Any, page: Any) -> None:
    """Every page loads its script and style afresh, as on a first visit (no memory cache)."""
    context.new_cdp_session(page).send("Network.setCacheDisabled", {"cacheDisabled": True})


def weigh(page: Any, url: str) -> dict[str, int]:
    """Visit `url` and count the bytes of script and stylesheet it loads: each response's
    decoded body plus the inline <script> and <style> of its HTML."""
    loaded: list[Any] = []

    def keep(response: Any) -> None:
        if response.request.resource_type in ("script", "stylesheet"):
            loaded.append(response)

    page.on("response", keep)
    try:
        page.goto(url, wait_until="load")  # every script and stylesheet is in by then
    finally:
        page.remove_listener("response", keep)
    files = sum(len(response.body()) for response in loaded if response.status == 200)
    inline = int(page.evaluate(INLINE))
    return {"files": len(loaded), "file_bytes": files, "inline_bytes": inline, "total_bytes": files + inline}


def resolve(page: Any, base: str, entry: str) -> str:
    """The URL of a PAGES entry: a path, or the first sensor's, automation's or its editor's,
    found from the page that links to it."""
    if entry == "sensor-detail":
        page.goto(base + "/sensors/")
        href = page.locator("a[href^='/sensors/'][href$='/']").evaluate_all(
            "links => links.map(a => a.getAttribute('href')).filter(h => h.split('/').length > 4)"
        )[0]
        return base + href
    if entry == "automation-detail":
        page.goto(base + "/automations/")
        return base + page.locator("a[href^='/automations/automation/?name=']").first.get_attribute("href")
    if entry == "automation-edit":
        page.goto(resolve(page, base, "automation-detail"))
        return base + page.locator("a[href^='/automations/edit/?name=']").first.get_attribute("href")
    return base + entry


def weigh_every_page(context: Any, page: Any, base: str) -> dict[str, dict[str, int]]:
    """Each of PAGES' script and style weight, keyed by its path."""
    uncached(context, page)
    weights = {}
    for entry in PAGES:
        url = resolve(page, base, entry)
        weights[url.removeprefix(base)] = weigh(page, url)
    return weights


def home_first_paint(context: Any, base: str) -> dict[str, float]:
    """Home's 'first-paint' and 'first-contentful-paint' in ms, in a fresh tab of the logged-in
    `context`, uncached."""
    page = context.new_page()
    try:
        uncached(context, page)
        page.goto(base + "/", wait_until="load")
        page.wait_for_function("() => performance.getEntriesByType('paint').length > 0")
        return {name: round(float(ms), 1) for name, ms in page.evaluate(PAINT).items()}
    finally:
        page.close()
