"""FEL through the REST API and the dashboard: upload, validation, list, detail, PDF, limits."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from audit.models import Event
from fel.models import Invoice
from tests.fel_support import BROKEN, SAT_SAMPLE, make_root
from tests.home.test_api_home import bearer

pytestmark = pytest.mark.django_db


@pytest.fixture
def fel_root(tmp_path, settings):
    return make_root(tmp_path, settings)


def upload(path, name=None):
    return SimpleUploadedFile(name or path.name, path.read_bytes(), content_type="application/xml")


def test_validate_list_detail_pdf(client, fel_root):
    auth = bearer(["fel"])
    response = client.post("/api/invoices/validate", {"file": upload(SAT_SAMPLE)}, **auth)
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["ok"] is True and body["issues"] == [] and body["has_pdf"] is True
    invoice = Invoice.objects.get(pk=body["invoice_id"])
    assert (fel_root / invoice.pdf_path).is_file() and invoice.xml_path.startswith("uploads/")
    event = Event.objects.get(action="fel.invoice.record")
    assert (event.interface, event.actor) == ("rest", "integrator")
    page = client.get("/api/invoices", {"limit": 1}, **auth).json()
    assert page["count"] == 1 and page["items"][0]["authorization_number"] == invoice.authorization_number
    assert client.get("/api/invoices", {"valid": "false"}, **auth).json()["count"] == 0
    detail = client.get(f"/api/invoices/{invoice.pk}", **auth).json()
    assert detail["total"] == str(invoice.total) and detail["valid"] is True
    pdf = client.get(f"/api/invoices/{invoice.pk}/pdf", **auth)
    assert pdf.status_code == 200 and pdf["Content-Type"] == "application/pdf"
    assert b"".join(pdf.streaming_content).startswith(b"%PDF")
    assert client.get("/api/invoices/999999", **auth).status_code == 404
    assert client.get("/api/invoices/999999/pdf", **auth).status_code == 404


def test_broken_and_unreadable_files(client, fel_root):
    auth = bearer(["fel"])
    results = [client.post("/api/invoices/validate", {"file": upload(path)}, **auth) for path in BROKEN]
    assert {r.status_code for r in results} <= {200, 409, 422}
    assert any(r.status_code == 200 and r.json()["ok"] is False and r.json()["issues"] for r in results)
    garbage = client.post(
        "/api/invoices/validate", {"file": SimpleUploadedFile("x.xml", b"not xml at all")}, **auth
    )
    assert garbage.status_code == 422 and garbage.json()["detail"]
    assert client.post("/api/invoices/validate", {}, **auth).status_code == 422


def test_too_large_is_413(client, fel_root, settings):
    settings.FEL_MAX_XML_BYTES = 100
    response = client.post("/api/invoices/validate", {"file": upload(SAT_SAMPLE)}, **bearer(["fel"]))
    assert response.status_code == 413


def test_tampered_copy_of_a_valid_invoice_is_409(client, fel_root):
    auth = bearer(["fel"])
    assert client.post("/api/invoices/validate", {"file": upload(SAT_SAMPLE)}, **auth).status_code == 200
    tampered = SAT_SAMPLE.read_bytes().replace(b"<dte:GranTotal>", b"<dte:GranTotal>9")
    response = client.post("/api/invoices/validate", {"file": SimpleUploadedFile("t.xml", tampered)}, **auth)
    assert response.status_code == 409
    assert Invoice.objects.get().valid is True
