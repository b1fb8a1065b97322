"""FEL XML received over HTTP (dashboard, REST API): kept under FEL_ROOT, validated,
rendered to PDF and recorded through `fel.services`, like files the MCP tools read."""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass, field
from pathlib import Path

from django.utils import timezone

from fel import services
from fel.config import branding, max_xml_bytes, output_dir
from fel.errors import FelError
from fel.models import Invoice
from fel.paths import fel_root, writable_dir
from fel.processing import process

UPLOAD_DIR = "uploads"


class UploadTooLarge(FelError):
    """The file is larger than FEL_MAX_XML_BYTES."""


@dataclass(slots=True)
class UploadOutcome:
    name: str
    ok: bool
    issues: list[str] = field(default_factory=list)
    totals: dict[str, str] | None = None
    error: str = ""
    invoice: Invoice | None = None
    # A valid invoice with the same authorization number is already recorded and was kept.
    conflict: bool = False

    def as_dict(self) -> dict[str, object]:
        inv = self.invoice
        return {
            "name": self.name,
            "ok": self.ok,
            "issues": self.issues,
            "totals": self.totals,
            "error": self.error or None,
            "conflict": self.conflict,
            "invoice_id": inv.pk if inv else None,
            "authorization_number": inv.authorization_number if inv else None,
            "has_pdf": bool(inv and inv.pdf_path),
        }


def safe_name(name: str) -> str:
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(name or "").stem).strip("._") or "factura"
    return f"{stem[:80]}.xml"


def process_upload(name: str, data: bytes, *, actor: str, interface: str) -> UploadOutcome:
    """Keep `data` as `FEL_ROOT/uploads/<batch>/<name>`, render its PDF and record the invoice."""
    limit = max_xml_bytes()
    if len(data) > limit:
        raise UploadTooLarge(
            f"El archivo XML mide {len(data)} bytes y supera el límite de {limit} bytes (FEL_MAX_XML_BYTES)."
        )
    filename = safe_name(name)
    batch = f"{timezone.now():%Y%m%d-%H%M%S}-{secrets.token_hex(4)}"
    folder = writable_dir(str(fel_root() / UPLOAD_DIR / batch), "subida")
    xml_path = folder / filename
    xml_path.write_bytes(data)
    pdf_dir = writable_dir(str(Path(output_dir()) / UPLOAD_DIR / batch), "salida")
    result = process(xml_path, limit, pdf_dir / f"{xml_path.stem}.pdf", branding())
    invoice = services.record_invoice(result, actor=actor, interface=interface)
    validation = result.validation
    return UploadOutcome(
        name=filename,
        ok=bool(validation and validation.ok and not result.error),
        issues=list(validation.issues) if validation else [],
        totals=validation.totals.as_strings() if validation else None,
        error=result.error,
        invoice=invoice,
        conflict=bool(invoice and invoice.xml_sha256 != result.xml_sha256),
    )
