"""Requests and Activity as a household reads them (issue #28), in a real Chromium (Debian's,
through Playwright) against a real daphne, at desktop and phone size: Requests in the
navigation with its count, a request written as a sentence with Approve as the primary
button, Activity rows as sentences with before -> after visible on a phone, a search by
"Salón", and a 3-file invoice batch as one row leading to the batch. Screenshots land in
artifacts/screenshots/."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from devices.home import services as home
from fel import batch_jobs
from mcp_endpoint.controls import confirmation
from mcp_endpoint.models import PendingConfirmation
from tests.dashboard.test_dashboard_browser import SHOTS, browser, csp_violations, log_in, owner  # noqa: F401
from tests.fel_support import REAL, make_root

pytestmark = [pytest.mark.browser, pytest.mark.live]
SIZES = {"desktop": {"width": 1280, "height": 900}, "phone": {"width": 390, "height": 844}}


def three_file_batch() -> int:
    uploads = [
        SimpleUploadedFile(path.name, path.read_bytes(), content_type="application/xml") for path in REAL[:3]
    ]
    job = batch_jobs.create_job(uploads, actor="maria", interface="dashboard")
    batch_jobs.run_job(job.pk, task_id="test")
    return job.pk


def test_requests_and_activity_in_sentences(daphne_server, owner, browser, tmp_path, settings):  # noqa: F811
    base = daphne_server
    make_root(tmp_path, settings)
    batch = three_file_batch()
    home.set_light_state("salon", True, actor="maria", interface="dashboard")
    home.set_light_state("cocina", True, actor="maria", interface="dashboard")
    arguments = {"armed": False}
    PendingConfirmation.objects.create(
        tool="set_alarm_state",
        summary="",
        arguments=arguments,
        arguments_hash=confirmation.arguments_hash(arguments),
        actor="Claude",
        interface="mcp-http",
        expires_at=timezone.now() + timedelta(seconds=120),
    )
    for size in SIZES:
        at_size(browser, base, size, batch)


def at_size(browser, base: str, size: str, batch: int) -> None:  # noqa: F811 (the fixture, passed on)
    context = browser.new_context(viewport=SIZES[size])
    page = context.new_page()
    violations = csp_violations(page)
    log_in(page, base)

    # Requests in the navigation, with how many wait.
    nav = page.get_by_role("navigation", name="Main").get_by_role("link", name="Requests")
    assert nav.is_visible() and page.locator("#requests-count").inner_text() == "1"
    page.screenshot(path=str(SHOTS / f"nav-requests-count-{size}.png"))

    # The request as a sentence, its exact arguments one click away, Approve the primary button.
    nav.click()
    page.wait_for_url(base + "/requests/")
    assert "Claude (through /mcp) asks to disarm the alarm" in page.locator("#requests-open").inner_text()
    approve = page.get_by_role("button", name="Approve")
    assert "btn-primary" in approve.get_attribute("class")
    assert "btn-primary" not in page.get_by_role("button", name="Deny").get_attribute("class")
    page.locator("#requests-open summary").first.click()
    assert '"armed": false' in page.locator("#requests-open pre.arguments").inner_text()
    page.screenshot(path=str(SHOTS / f"requests-sentence-{size}.png"), full_page=True)

    # Activity in sentences; before -> after shown under the sentence, on a phone too.
    page.goto(base + "/activity/")
    rows = page.locator("#event-list tbody tr")
    salon = rows.filter(has_text="maria switched the Salón light on from the dashboard").first
    assert salon.is_visible()
    change = salon.locator(".change")
    assert change.is_visible() and change.inner_text() == "on: no → on: yes"

    # The 3-file batch: one row, leading to the batch.
    batch_rows = rows.filter(has_text="processed a batch of 3 invoices")
    assert batch_rows.count() == 1
    assert batch_rows.get_by_role("link").get_attribute("href") == f"/invoices/batches/{batch}/"
    assert rows.filter(has_text="recorded the invoice").count() == 0
    page.screenshot(path=str(SHOTS / f"activity-sentences-{size}.png"), full_page=True)

    # Searched by the name the household uses.
    page.get_by_label("What").fill("Salón")
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url("**target=*")
    assert rows.filter(has_text="the Salón light on").count() == 1
    assert rows.filter(has_text="Cocina").count() == 0
    page.screenshot(path=str(SHOTS / f"activity-search-salon-{size}.png"), full_page=True)

    assert violations == []
    context.close()
