"""The invoice admin: list, search, filters, the PDF link and the re-render action."""

import pytest
from django.test import Client

from audit.models import Event
from fel.models import Invoice
from tests.fel_support import call, make_root

pytestmark = pytest.mark.django_db


@pytest.fixture
def invoices(tmp_path, settings):
    root = make_root(tmp_path, settings)
    call("fel_render", {"xml_path": "data/xml/fact_sat_1item-servicio_receptor-empresa.xml"})
    call("fel_validate", {"xml_path": "data/xml/fpeq_sat_1item_pequeno-contribuyente-sin-iva.xml"})
    return root


def test_list_search_and_filters(invoices, staff_client):
    page = staff_client.get("/admin/fel/invoice/")
    assert page.status_code == 200 and b"9E52C854-E18B-45C1-A77B-C87CF42F35F1" in page.content
    found = staff_client.get("/admin/fel/invoice/?q=HIPRINT")
    assert b"9E52C854" in found.content and b"40706AFC" not in found.content
    assert b"40706AFC" in staff_client.get("/admin/fel/invoice/?tipo__exact=FPEQ").content
    assert b"9E52C854" in staff_client.get("/admin/fel/invoice/?valid__exact=1").content


def test_pdf_link_serves_the_pdf(invoices, staff_client):
    invoice = Invoice.objects.get(tipo="FACT")
    response = staff_client.get(f"/admin/fel/invoice/{invoice.pk}/pdf/")
    assert response.status_code == 200 and response["Content-Type"] == "application/pdf"
    assert b"".join(response.streaming_content).startswith(b"%PDF")
    assert Client().get(f"/admin/fel/invoice/{invoice.pk}/pdf/").status_code == 302  # anonymous: to login
    no_pdf = Invoice.objects.get(tipo="FPEQ")
    assert staff_client.get(f"/admin/fel/invoice/{no_pdf.pk}/pdf/").status_code == 404


def test_rerender_action(invoices, staff_client):
    (
        invoices / "xml" / "fpeq_sat_1item_pequeno-contribuyente-sin-iva.xml"
    ).unlink()  # the stored XML suffices
    ids = list(Invoice.objects.values_list("pk", flat=True))
    response = staff_client.post(
        "/admin/fel/invoice/", {"action": "rerender", "_selected_action": ids}, follow=True
    )
    assert response.status_code == 200
    fpeq = Invoice.objects.get(tipo="FPEQ")
    assert fpeq.pdf_path == "out/fpeq_sat_1item_pequeno-contribuyente-sin-iva.pdf"
    assert (invoices / fpeq.pdf_path).is_file()
    assert Event.objects.filter(interface="admin", action="fel.invoice.record").count() == 2
