"""REST for `fel_batch` jobs on uploaded files (`/api/invoices/batches`), scope `fel`.

Upload several XML files and get `202` with the job; poll it (`?since=` returns only the file
outcomes after that position) until `state` is `done` or `failed`; then fetch the manifest,
a ZIP of the manifest and PDFs, or one PDF. Jobs are run by `fel.batch_jobs`."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from django.http import FileResponse, HttpRequest
from django.utils.translation import gettext
from ninja import File, Query, Router, Schema, Status
from ninja.files import UploadedFile

from audit.models import Event
from common.rest import Error, need
from fel import batch_jobs, selectors
from fel.errors import FelError
from fel.models import BatchJob

router = Router(tags=["invoice batches"])
BINARY = {"schema": {"type": "string", "format": "binary"}}


class BatchFileOut(Schema):
    position: int
    name: str
    ok: bool
    issues: list[str]
    error: str
    totals: dict[str, str] | None
    authorization_number: str
    xml_sha256: str
    pdf_sha256: str
    has_pdf: bool


class BatchOut(Schema):
    id: int
    state: str  # queued, running, done, failed, interrupted
    total: int
    done: int
    invalid: int
    current: str
    created_by: str
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    error: str
    files: list[BatchFileOut]


class BatchPage(Schema):
    count: int
    limit: int
    offset: int
    items: list[BatchOut]


def _out(job: BatchJob, since: int | None = 0) -> dict[str, object]:
    """The job as `BatchOut`; `since=None` leaves the files out (lists)."""
    files = [] if since is None else selectors.job_files(job, since)
    return {
        **{f: getattr(job, f) for f in BatchOut.model_fields if f not in {"state", "files"}},
        "state": selectors.job_state(job),
        "files": [
            {
                **{f: getattr(row, f) for f in BatchFileOut.model_fields if f != "has_pdf"},
                "has_pdf": bool(row.pdf_name),
            }
            for row in files
        ],
    }


def _job(job_id: int) -> BatchJob | None:
    return selectors.job(job_id)


@router.post(
    "",
    response={202: BatchOut, 400: Error, 413: Error, 422: Error},
    summary="Start a batch on uploaded FEL XML files (one PDF each, a manifest.json)",
)
def start_batch(request: HttpRequest, files: File[list[UploadedFile]]) -> Status[dict[str, object]]:
    actor = need(request, "fel")
    try:
        job = batch_jobs.start_job(files, actor=actor, interface=Event.Interface.REST)
    except FelError as exc:
        return Status(422, {"detail": str(exc)})
    return Status(202, _out(job))


@router.get("", response=BatchPage, summary="Batches, newest first (without their files)")
def list_batches(
    request: HttpRequest,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    offset: Annotated[int, Query(ge=0, le=1_000_000_000)] = 0,
) -> dict[str, object]:
    need(request, "fel")
    found = BatchJob.objects.all()
    items = [_out(job, since=None) for job in found[offset : offset + limit]]
    return {"count": found.count(), "limit": limit, "offset": offset, "items": items}


@router.get("/{job_id}", response={200: BatchOut, 404: Error}, summary="A batch and its files' outcomes")
def get_batch(
    request: HttpRequest, job_id: int, since: Annotated[int, Query(ge=0, le=1_000_000_000)] = 0
) -> Status[dict[str, str]] | dict[str, object]:
    need(request, "fel")
    job = _job(job_id)
    if job is None:
        return Status(404, {"detail": gettext("No batch %(id)s.") % {"id": job_id}})
    return _out(job, since)


@router.get(
    "/{job_id}/manifest",
    response={200: None, 404: Error},
    summary="The finished batch's manifest.json",
    openapi_extra={"responses": {200: {"content": {"application/json": {"schema": {"type": "object"}}}}}},
)
def batch_manifest(request: HttpRequest, job_id: int) -> Status[dict[str, str]] | FileResponse:
    need(request, "fel")
    job = _job(job_id)
    path = selectors.job_manifest(job) if job else None
    if path is None:
        return Status(
            404,
            {"detail": gettext("Batch %(id)s has no manifest (unknown or not finished).") % {"id": job_id}},
        )
    return FileResponse(path.open("rb"), content_type="application/json", filename=f"manifest-{job_id}.json")


@router.get(
    "/{job_id}/archive",
    response={200: None, 404: Error},
    summary="A ZIP of the finished batch's manifest.json and PDFs",
    openapi_extra={"responses": {200: {"content": {"application/zip": BINARY}}}},
)
def batch_archive(request: HttpRequest, job_id: int) -> Status[dict[str, str]] | FileResponse:
    need(request, "fel")
    job = _job(job_id)
    archive = selectors.job_archive(job) if job else None
    if archive is None:
        return Status(
            404,
            {"detail": gettext("Batch %(id)s has no archive (unknown or not finished).") % {"id": job_id}},
        )
    return FileResponse(archive, content_type="application/zip", filename=f"fel-batch-{job_id}.zip")


@router.get(
    "/{job_id}/files/{position}/pdf",
    response={200: None, 404: Error},
    summary="The PDF of one file of a batch",
    openapi_extra={"responses": {200: {"content": {"application/pdf": BINARY}}}},
)
def batch_file_pdf(request: HttpRequest, job_id: int, position: int) -> Status[dict[str, str]] | FileResponse:
    need(request, "fel")
    job = _job(job_id)
    found = selectors.job_file_pdf(job, position) if job else None
    if found is None:
        return Status(
            404,
            {
                "detail": gettext("Batch %(id)s has no PDF for file %(position)s.")
                % {"id": job_id, "position": position}
            },
        )
    return FileResponse(found[0].open("rb"), content_type="application/pdf", filename=found[1])
