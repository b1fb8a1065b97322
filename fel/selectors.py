"""Reads of recorded invoices, for the admin, the dashboard and the REST API."""

from __future__ import annotations

from pathlib import Path

from fel.models import Invoice
from fel.paths import FelPathError, fel_root, resolve_inside_root


def invoice_pdf(invoice: Invoice) -> Path | None:
    """The invoice's PDF file when it exists (and still lies inside FEL_ROOT), else None."""
    if not invoice.pdf_path:
        return None
    try:
        path = resolve_inside_root(str(fel_root() / invoice.pdf_path), "PDF")
    except FelPathError:
        return None
    return path if path.is_file() else None
