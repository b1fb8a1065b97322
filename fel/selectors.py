"""Reads of recorded invoices and batch jobs, for the admin, the dashboard and the REST API."""

from __future__ import annotations

import tempfile
import zipfile
from pathlib import Path
from typing import IO

from django.utils import timezone

from fel.batch_jobs import lease
from fel.models import BatchJob, BatchJobFile, Invoice
from fel.paths import FelPathError, fel_root, resolve_inside_root


def invoice_pdf(invoice: Invoice) -> Path | None:
    """The invoice's PDF file when it exists (and still lies inside FEL_ROOT), else None."""
    return _inside(fel_root() / invoice.pdf_path, "PDF") if invoice.pdf_path else None


# --- batch jobs ------------------------------------------------------------------------------

INTERRUPTED = "interrupted"


def recent_jobs(limit: int = 10) -> list[BatchJob]:
    return list(BatchJob.objects.all()[:limit])


def job(pk: int) -> BatchJob | None:
    return BatchJob.objects.filter(pk=pk).first() if 0 < pk < 2**62 else None


def job_state(found: BatchJob) -> str:
    """queued, running, done, failed, or interrupted: running, but its task silent for two
    leases (its worker died and no tasks worker has resumed it yet; one will when it runs)."""
    if found.state == BatchJob.State.RUNNING and found.updated_at < timezone.now() - 2 * lease():
        return INTERRUPTED
    return found.state


def job_files(found: BatchJob, since: int = 0) -> list[BatchJobFile]:
    """The job's file outcomes after position `since`, in order of completion."""
    return list(found.files.filter(position__gt=since))


def job_manifest(found: BatchJob) -> Path | None:
    if found.state != BatchJob.State.DONE or not found.manifest_path:
        return None
    return _inside(fel_root() / found.manifest_path, "manifest")


def job_file_pdf(found: BatchJob, position: int) -> tuple[Path, str] | None:
    """The PDF of one file of the job and a download name, when it was rendered."""
    row = found.files.filter(position=position).exclude(pdf_name="").first() if 0 < position < 2**31 else None
    if row is None:
        return None
    path = _inside(fel_root() / found.out_dir / row.pdf_name, "PDF")
    return (path, row.pdf_name) if path else None


def job_archive(found: BatchJob) -> IO[bytes] | None:
    """A ZIP of the job's manifest.json and PDFs, as a file to stream (None until the job is done)."""
    manifest = job_manifest(found)
    if manifest is None:
        return None
    buffer = tempfile.SpooledTemporaryFile(max_size=8 * 1024 * 1024)  # noqa: SIM115 - the caller closes it
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.write(manifest, manifest.name)
        for row in job_files(found):
            pdf = job_file_pdf(found, row.position)
            if pdf:
                archive.write(pdf[0], f"pdf/{pdf[1]}")
    buffer.seek(0)
    return buffer


def _inside(path: Path, what: str) -> Path | None:
    try:
        resolved = resolve_inside_root(str(path), what)
    except FelPathError:
        return None
    return resolved if resolved.is_file() else None
