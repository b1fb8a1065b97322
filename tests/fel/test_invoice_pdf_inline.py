"""An invoice's PDF viewed in the browser (issue 28: download only): the Invoices page links
"View" (inline, in a new tab) beside "Download" (an attachment, as before); both for members
and owners only, a 404 for an invoice without a PDF."""

import pytest

from fel.models import Invoice
from tests.fel.test_fel_admin import invoices  # noqa: F401 (fixture)
from tests.hub_support import create_account

pytestmark = pytest.mark.django_db


@pytest.fixture
def member(client):
    client.force_login(create_account("ana", "a-long-password-1", "member"))
    return client


def test_view_shows_the_pdf_inline_and_download_stays_an_attachment(invoices, member):  # noqa: F811
    invoice = Invoice.objects.exclude(pdf_path="").get()
    page = member.get("/invoices/").content.decode()
    view_url, download_url = f"/invoices/{invoice.pk}/pdf/view/", f"/invoices/{invoice.pk}/pdf/"
    assert f'<a href="{view_url}" target="_blank" rel="noopener">View' in page
    assert f'<a href="{download_url}" download>Download' in page
    name = f"{invoice.tipo}-{invoice.serie}-{invoice.numero}.pdf"
    viewed = member.get(view_url)
    assert viewed.status_code == 200 and viewed["Content-Type"] == "application/pdf"
    assert viewed["Content-Disposition"] == f'inline; filename="{name}"'
    assert b"".join(viewed.streaming_content).startswith(b"%PDF")
    downloaded = member.get(download_url)
    assert downloaded["Content-Disposition"] == f'attachment; filename="{name}"'


def test_view_needs_a_pdf_and_a_member(invoices, member, client):  # noqa: F811
    no_pdf = Invoice.objects.get(tipo="FPEQ")
    assert member.get(f"/invoices/{no_pdf.pk}/pdf/view/").status_code == 404
    invoice = Invoice.objects.exclude(pdf_path="").get()
    member.logout()
    client.force_login(create_account("guest", "a-long-password-1", "guest"))
    assert client.get(f"/invoices/{invoice.pk}/pdf/view/").status_code == 403
