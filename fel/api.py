"""FEL's REST router: validate (and render) an uploaded XML, list and read invoices, PDFs.

Needs the `fel` scope. Uploads go through `fel.uploads`, which records them through
`fel.services` with interface `rest`."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from django.http import FileResponse, HttpRequest
from django.utils.translation import gettext
from ninja import File, Query, Router, Schema, Status
from ninja.files import UploadedFile

from audit.models import Event
from common.rest import Error, need
from fel import selectors
from fel.errors import FelError
from fel.models import Invoice
from fel.uploads import UploadTooLarge, process_upload

router = Router(tags=["invoices"])


class InvoiceOut(Schema):
    id: int
    authorization_number: str
    serie: str
    numero: str
    tipo: str
    currency: str
    emisor_nit: str
    emisor_name: str
    receptor_id: str
    receptor_name: str
    issued_at: datetime | None
    certified_at: datetime | None
    subtotal: str
    iva: str
    total: str
    valid: bool
    issues: list[str]
    has_pdf: bool

    @staticmethod
    def resolve_subtotal(obj: Invoice) -> str:
        return str(obj.subtotal)

    @staticmethod
    def resolve_iva(obj: Invoice) -> str:
        return str(obj.iva)

    @staticmethod
    def resolve_total(obj: Invoice) -> str:
        return str(obj.total)

    @staticmethod
    def resolve_has_pdf(obj: Invoice) -> bool:
        return bool(obj.pdf_path)


class InvoicePage(Schema):
    count: int
    limit: int
    offset: int
    items: list[InvoiceOut]


class ValidationOut(Schema):
    name: str
    ok: bool
    issues: list[str]
    totals: dict[str, str] | None
    error: str | None
    conflict: bool
    invoice_id: int | None
    authorization_number: str | None
    has_pdf: bool


@router.post(
    "/validate",
    response={200: ValidationOut, 409: Error, 413: Error, 422: Error},
    summary="Validate an uploaded FEL XML, render its PDF and record it",
)
def validate_upload(
    request: HttpRequest, file: File[UploadedFile]
) -> Status[dict[str, object]] | dict[str, object]:
    actor = need(request, "fel")
    try:
        outcome = process_upload(
            file.name or "factura.xml", file.read(), actor=actor, interface=Event.Interface.REST
        )
    except UploadTooLarge as exc:
        return Status(413, {"detail": str(exc)})
    except FelError as exc:
        return Status(422, {"detail": str(exc)})
    if outcome.error and outcome.totals is None:
        return Status(422, {"detail": outcome.error})
    if outcome.conflict:
        return Status(
            409,
            {
                "detail": gettext(
                    "A valid invoice with this authorization number is already recorded; it was kept."
                ),
                **outcome.as_dict(),
            },
        )
    return outcome.as_dict()


@router.get("", response=InvoicePage, summary="Recorded invoices, newest first")
def list_invoices(
    request: HttpRequest,
    valid: bool | None = None,
    tipo: Annotated[str, Query(pattern=r"^[A-Z]{0,8}$")] = "",
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Annotated[int, Query(ge=0, le=1_000_000_000)] = 0,
) -> dict[str, object]:
    need(request, "fel")
    found = Invoice.objects.defer("xml")
    if valid is not None:
        found = found.filter(valid=valid)
    if tipo:
        found = found.filter(tipo=tipo)
    return {
        "count": found.count(),
        "limit": limit,
        "offset": offset,
        "items": list(found[offset : offset + limit]),
    }


def _invoice(pk: int) -> Invoice | None:
    if not 0 < pk < 2**62:
        return None
    return Invoice.objects.defer("xml").filter(pk=pk).first()


@router.get("/{invoice_id}", response={200: InvoiceOut, 404: Error}, summary="One invoice")
def get_invoice(request: HttpRequest, invoice_id: int) -> Status[dict[str, str]] | Invoice:
    need(request, "fel")
    invoice = _invoice(invoice_id)
    if invoice is None:
        return Status(404, {"detail": gettext("No invoice %(id)s.") % {"id": invoice_id}})
    return invoice


@router.get(
    "/{invoice_id}/pdf",
    response={200: None, 404: Error},
    summary="The invoice's PDF",
    openapi_extra={
        "responses": {
            200: {"content": {"application/pdf": {"schema": {"type": "string", "format": "binary"}}}}
        }
    },
)
def invoice_pdf(request: HttpRequest, invoice_id: int) -> Status[dict[str, str]] | FileResponse:
    need(request, "fel")
    invoice = _invoice(invoice_id)
    pdf = selectors.invoice_pdf(invoice) if invoice else None
    if invoice is None or pdf is None:
        return Status(404, {"detail": gettext("Invoice %(id)s has no PDF.") % {"id": invoice_id}})
    name = f"{invoice.tipo}-{invoice.serie}-{invoice.numero}.pdf"
    return FileResponse(pdf.open("rb"), content_type="application/pdf", filename=name)
