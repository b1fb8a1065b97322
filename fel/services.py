"""The FEL operations every door uses (MCP tools, admin, dashboard, REST), and the only writer
of `Invoice` rows. Each recorded document also leaves an audit `Event` and a broadcast.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from django.db import transaction

from audit.selectors import BATCH_FILE
from audit.services import record_event
from fel import batch as batch_engine
from fel.config import batch_workers, branding, max_xml_bytes, output_dir
from fel.errors import FelError
from fel.models import Invoice
from fel.money import q2
from fel.paths import (
    FelPathError,
    display_path,
    existing_dir,
    existing_file,
    fel_root,
    writable_dir,
    writable_file,
)
from fel.processing import Processed, process, process_bytes
from fel.validation import Validation

Progress = Callable[[int, int, str], None]
EntryDone = Callable[[batch_engine.ManifestEntry], None]


@dataclass(frozen=True, slots=True)
class BatchOutcome:
    count: int
    invalid: int
    out_dir: Path
    manifest_path: Path


def validate_xml(xml_path: str, *, actor: str, interface: str) -> Validation:
    """Validate the FEL file at `xml_path` and record it. Raises FelError if it cannot be read."""
    result = process(existing_file(xml_path, "XML"), max_xml_bytes())
    validation = _raise_if_unreadable(result)
    record_invoice(result, actor=actor, interface=interface)
    return validation


def render_xml(
    xml_path: str,
    *,
    logo_path: str | None = None,
    theme: str | None = None,
    out_path: str | None = None,
    actor: str,
    interface: str,
) -> Path:
    """Render the branded PDF of `xml_path` (default `<FEL_OUTPUT_DIR>/<name>.pdf`) and record it."""
    source = existing_file(xml_path, "XML")
    brand = branding(logo_path, theme)
    target = writable_file(out_path or str(Path(output_dir()) / f"{source.stem}.pdf"), "salida PDF")
    if target.suffix.lower() != ".pdf":
        raise FelPathError(f"La ruta de salida «{out_path}» debe terminar en .pdf.")
    result = process(source, max_xml_bytes(), target, brand)
    _raise_if_unreadable(result)
    record_invoice(result, actor=actor, interface=interface)
    return target


def run_batch(
    dir_xml: str,
    out_dir: str | None = None,
    *,
    actor: str,
    interface: str,
    progress: Progress | None = None,
    on_entry: EntryDone | None = None,
    earlier: Sequence[batch_engine.ManifestEntry] = (),
) -> BatchOutcome:
    """One PDF per `*.xml` of `dir_xml` into `out_dir`, a manifest.json, and a recorded Invoice each.

    `on_entry` receives each file's manifest entry as soon as that file is done (before
    `progress`), inside the transaction that records its invoice and audit event: what it writes
    is committed with them or not at all. `earlier` holds the entries of files already done (a
    batch resumed after its worker died): those are not processed again, only put in the manifest.
    """
    folder = existing_dir(dir_xml, "XML")
    target = writable_dir(out_dir or output_dir(), "salida")
    brand = branding()
    files = batch_engine.xml_files(folder)
    entries = list(earlier)
    finished = {entry["xml"] for entry in entries}
    total, done = len(files), len(entries)
    jobs: list[tuple[Path, Path]] = []
    for file in files:
        if display_path(file) in finished:
            continue
        try:  # a symlink in the folder may lead out of FEL_ROOT: that file fails, not the batch
            jobs.append((existing_file(str(file), "XML"), target / f"{file.stem}.pdf"))
        except FelPathError as exc:
            entry = batch_engine.manifest_entry(Processed(xml_path=file, error=str(exc)), display_path)
            entries.append(entry)
            if on_entry:
                on_entry(entry)
            done += 1
    if progress and done > len(finished):
        progress(done, total, "archivos rechazados por su ruta")
    for result in batch_engine.run(jobs, brand, max_xml_bytes(), batch_workers()):
        entry = batch_engine.manifest_entry(result, display_path)
        with transaction.atomic():
            record_invoice(result, actor=actor, interface=interface, in_batch=True)
            if on_entry:
                on_entry(entry)
        entries.append(entry)
        done += 1
        if progress:
            progress(done, total, result.xml_path.name)
    manifest_path = target / batch_engine.MANIFEST_NAME
    batch_engine.write_manifest(manifest_path, display_path(folder), display_path(target), entries)
    return BatchOutcome(
        count=total,
        invalid=sum(1 for e in entries if not e["ok"]),
        out_dir=target,
        manifest_path=manifest_path,
    )


def record_batch(outcome: BatchOutcome, *, folder: str, actor: str, interface: str) -> None:
    """Audit a `run_batch` made outside a job (the `fel_batch` tool) as one event, which the
    home's activity shows for the batch's files (recorded as `BATCH_FILE`); a job records its
    own (`batch_jobs`)."""
    record_event(
        actor=actor,
        interface=interface,
        action="fel.batch",
        target=f"folder:{folder}"[:200],
        after={"state": "done", "count": outcome.count, "invalid": outcome.invalid},
    )


def rerender_invoice(invoice: Invoice, *, actor: str, interface: str) -> Invoice:
    """Rebuild the PDF of a recorded invoice from its stored XML, with today's branding."""
    root = fel_root()
    pdf_path = root / invoice.pdf_path if invoice.pdf_path else None
    if pdf_path is None:
        pdf_path = Path(output_dir()) / f"{Path(invoice.xml_path).stem or invoice.authorization_number}.pdf"
    target = writable_file(str(pdf_path), "salida PDF")
    result = process_bytes(root / invoice.xml_path, invoice.xml.encode("utf-8"), target, branding())
    _raise_if_unreadable(result)
    return record_invoice(result, actor=actor, interface=interface) or invoice


def record_invoice(
    result: Processed, *, actor: str, interface: str, in_batch: bool = False
) -> Invoice | None:
    """Create or update the Invoice of a processed document (None when it has no authorization).

    A valid record is never replaced by an invalid document carrying the same authorization
    number (a tampered copy of a certified invoice): the genuine data stays. A file of a batch
    (`in_batch`) is audited as `BATCH_FILE`: the home's activity shows its batch's one summary
    event instead of one row per file.
    """
    doc, validation = result.document, result.validation
    if doc is None or validation is None or not doc.certification.authorization:
        return None
    cert = doc.certification
    root = fel_root()
    fields = {
        "serie": cert.serie[:32],
        "numero": cert.numero[:32],
        "tipo": doc.tipo[:8],
        "currency": doc.currency[:3],
        "emisor_nit": doc.emisor.tax_id[:32],
        "emisor_name": doc.emisor.name[:300],
        "receptor_id": doc.receptor.tax_id[:32],
        "receptor_name": doc.receptor.name[:300],
        "certifier_nit": cert.certifier_nit[:32],
        "certifier_name": cert.certifier_name[:300],
        "issued_at": doc.issued_at,
        "certified_at": cert.certified_at,
        "subtotal": _stored_amount(validation.totals.subtotal),
        "iva": _stored_amount(validation.totals.iva),
        "total": _stored_amount(validation.totals.total),
        "valid": validation.ok and not result.error,
        "issues": [*validation.issues, *([result.error] if result.error else [])],
        "xml_path": _relative(result.xml_path, root),
        "xml_sha256": result.xml_sha256,
        "xml": result.xml_text,
    }
    if result.pdf_path is not None:
        fields |= {"pdf_path": _relative(result.pdf_path, root), "pdf_sha256": result.pdf_sha256}
    with transaction.atomic():
        existing = Invoice.objects.select_for_update().filter(authorization_number=cert.authorization).first()
        if existing and existing.valid and not fields["valid"] and existing.xml_sha256 != result.xml_sha256:
            return existing
        before = {"valid": existing.valid, "total": str(existing.total)} if existing else None
        invoice, _ = Invoice.objects.update_or_create(
            authorization_number=cert.authorization, defaults=fields
        )
        after = {"valid": invoice.valid, "total": str(invoice.total), "pdf": invoice.pdf_path}
        record_event(
            actor=actor,
            interface=interface,
            action=BATCH_FILE if in_batch else "fel.invoice.record",
            target=f"invoice:{invoice.authorization_number}",
            before=before,
            after=after,
            broadcast={"kind": "invoice", "id": invoice.pk, **after},
        )
    return invoice


def _raise_if_unreadable(result: Processed) -> Validation:
    """The document's validation; raises FelError when it could not be read (a file that was
    read always has one)."""
    if result.error or result.validation is None:
        raise FelError(result.error)
    return result.validation


def _relative(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def _stored_amount(value: Decimal) -> Decimal:
    """Cents for the database column; absurd values from a hostile file are capped, not crashed on."""
    limit = Decimal("9999999999999999.99")
    return max(-limit, min(limit, q2(value)))
