"""`fel_batch` jobs on uploaded files, for the dashboard and the REST API; the only writer of
`BatchJob` and `BatchJobFile` rows.

The uploads are kept as `FEL_ROOT/uploads/<folder>/*.xml`, then `fel.services.run_batch` (the
engine of the `fel_batch` MCP tool) turns them into PDFs in `<FEL_OUTPUT_DIR>/uploads/<folder>/`
with their manifest.json, in a background thread of the process that received them. Progress
and each file's outcome are stored as they come, so any hub process can report them and a
reloaded page finds the job again. A file that cannot be read is one failed entry, never the
end of the batch.
"""

from __future__ import annotations

import logging
import secrets
import threading
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Protocol

from django.db import connections
from django.utils import timezone

from audit.services import record_event
from fel import services
from fel.batch import ManifestEntry
from fel.config import output_dir
from fel.errors import FelError
from fel.models import BatchJob, BatchJobFile
from fel.paths import fel_root, writable_dir
from fel.uploads import UPLOAD_DIR, safe_name

logger = logging.getLogger(__name__)


class Upload(Protocol):
    """What Django's UploadedFile offers and a job needs."""

    name: str | None

    def chunks(self) -> Iterator[bytes]: ...


def start_job(uploads: Sequence[Upload], *, actor: str, interface: str) -> BatchJob:
    """Keep the uploads under FEL_ROOT, record a queued job and start it in the background."""
    job = create_job(uploads, actor=actor, interface=interface)
    launch(job.pk)
    return job


def create_job(uploads: Sequence[Upload], *, actor: str, interface: str) -> BatchJob:
    if not uploads:
        raise FelError("Elija al menos un archivo XML.")
    folder = f"{timezone.now():%Y%m%d-%H%M%S}-{secrets.token_hex(4)}"
    root = fel_root()
    xml_dir = writable_dir(str(root / UPLOAD_DIR / folder), "subida")
    out_dir = writable_dir(str(Path(output_dir()) / UPLOAD_DIR / folder), "salida")
    for name, upload in zip(_unique_names(u.name or "" for u in uploads), uploads, strict=True):
        with (xml_dir / name).open("wb") as fh:
            for chunk in upload.chunks():
                fh.write(chunk)
    return BatchJob.objects.create(
        folder=folder,
        created_by=actor[:150],
        interface=interface,
        total=len(uploads),
        xml_dir=str(xml_dir.relative_to(root)),
        out_dir=str(out_dir.relative_to(root)),
    )


def launch(job_id: int) -> None:
    """Run the job in a thread of this process (tests replace this with `run_job`)."""
    threading.Thread(target=_thread_main, args=(job_id,), name=f"fel-batch-{job_id}", daemon=True).start()


def _thread_main(job_id: int) -> None:
    try:
        run_job(job_id)
    finally:
        connections.close_all()  # this thread's own connections


def run_job(job_id: int) -> None:
    """Run a queued job to its end (done or failed); a job already claimed is left alone."""
    now = timezone.now()
    claimed = BatchJob.objects.filter(pk=job_id, state=BatchJob.State.QUEUED).update(
        state=BatchJob.State.RUNNING, started_at=now, updated_at=now
    )
    if not claimed:
        return
    job = BatchJob.objects.get(pk=job_id)
    recorder = _Recorder(job)
    root = fel_root()
    try:
        outcome = services.run_batch(
            str(root / job.xml_dir),
            str(root / job.out_dir),
            actor=job.created_by,
            interface=job.interface,
            progress=recorder.progress,
            on_entry=recorder.entry,
        )
    except FelError as exc:
        _finish(job, BatchJob.State.FAILED, error=str(exc), done=recorder.position, invalid=recorder.invalid)
    except Exception:
        logger.exception("FEL batch job %s failed", job_id)
        _finish(
            job,
            BatchJob.State.FAILED,
            error="Error interno al procesar el lote; los detalles están en el registro del hub.",
            done=recorder.position,
            invalid=recorder.invalid,
        )
    else:
        _finish(
            job,
            BatchJob.State.DONE,
            done=outcome.count,
            invalid=outcome.invalid,
            manifest_path=str(outcome.manifest_path.relative_to(root)),
        )


class _Recorder:
    """Stores each manifest entry and the counters as `run_batch` reports them."""

    def __init__(self, job: BatchJob) -> None:
        self.job = job
        self.position = 0
        self.invalid = 0

    def entry(self, entry: ManifestEntry) -> None:
        self.position += 1
        self.invalid += not entry["ok"]
        BatchJobFile.objects.create(job=self.job, position=self.position, **_file_fields(entry))

    def progress(self, done: int, total: int, name: str) -> None:
        BatchJob.objects.filter(pk=self.job.pk).update(
            done=done, total=total, invalid=self.invalid, current=name[:200], updated_at=timezone.now()
        )


def _finish(job: BatchJob, state: str, **fields: object) -> None:
    now = timezone.now()
    BatchJob.objects.filter(pk=job.pk).update(state=state, finished_at=now, updated_at=now, **fields)
    job.refresh_from_db()
    summary = {"state": job.state, "count": job.done, "invalid": job.invalid}
    record_event(
        actor=job.created_by,
        interface=job.interface,
        action="fel.batch",
        target=f"batch:{job.pk}",
        after=summary | ({"error": job.error} if job.error else {}),
        broadcast={"kind": "fel_batch", "id": job.pk, **summary},
    )


def _file_fields(entry: ManifestEntry) -> dict[str, object]:
    error = entry["error"] or ""
    pdf = entry["pdf"]
    return {
        "name": Path(entry["xml"]).name[:200],
        "ok": entry["ok"],
        "issues": [issue for issue in entry["issues"] if issue != error],
        "error": error,
        "totals": entry["totals"],
        "authorization_number": (entry["authorization_number"] or "")[:36],
        "xml_sha256": entry["xml_sha256"] or "",
        "pdf_name": Path(pdf).name[:200] if pdf else "",
        "pdf_sha256": entry["pdf_sha256"] or "",
    }


def _unique_names(names: Iterable[str]) -> Iterator[str]:
    """Safe file names, `-2`, `-3`... added when two uploads share one."""
    seen: set[str] = set()
    for raw in names:
        name = safe_name(raw)
        stem, n = name[:-4], 2
        while name.lower() in seen:
            name, n = f"{stem}-{n}.xml", n + 1
        seen.add(name.lower())
        yield name
