"""The Invoices pages: uploads become a server-side `fel_batch` job (`fel.batch_jobs`), whose
panel the page polls while it runs (`?partial=1`); the manifest, a ZIP and each PDF are
downloadable when it ends. Reads through `fel.selectors`."""

from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.template.defaultfilters import pluralize
from django.urls import reverse
from django.views.decorators.http import require_GET

from audit.models import Event
from common import roles
from dashboard.access import role_required, wants_json
from fel import batch_jobs, selectors
from fel.errors import FelError
from fel.models import BatchJob, Invoice

INVOICES_PER_PAGE = 20
RECENT_JOBS = 8
FOLD_VALID_AFTER = 5


@role_required(roles.USE_INVOICES)
def invoices(request: HttpRequest) -> HttpResponse:
    """GET: the upload form, the latest batch, earlier batches, recorded invoices. POST: start a batch."""
    if request.method == "POST":
        return _start_batch(request)
    if request.method != "GET":
        return HttpResponse(status=405, headers={"Allow": "GET, POST"})
    jobs = selectors.recent_jobs(RECENT_JOBS + 1)
    mine = next((j for j in jobs if j.created_by == request.user.get_username()), None)
    page = Paginator(Invoice.objects.defer("xml"), INVOICES_PER_PAGE).get_page(request.GET.get("page"))
    return render(
        request,
        "dashboard/invoices.html",
        {
            "page": "invoices",
            "last": _panel_context(mine) if mine else None,
            "jobs": [_row(j) for j in jobs if j != mine][:RECENT_JOBS],
            "invoices": page,
        },
    )


def _start_batch(request: HttpRequest) -> HttpResponse:
    files = request.FILES.getlist("files")
    error = "" if files else "Choose at least one XML file."
    if files:
        try:
            job = batch_jobs.start_job(
                files, actor=request.user.get_username(), interface=Event.Interface.DASHBOARD
            )
        except FelError as exc:
            error = str(exc)
    if error:
        if wants_json(request):
            return JsonResponse({"error": error}, status=400)
        messages.error(request, error)
        return redirect("dashboard:invoices")
    url = reverse("dashboard:batch", args=[job.pk])
    if wants_json(request):
        return JsonResponse({"id": job.pk, "url": url, "panel": f"{url}?partial=1"}, status=202)
    return redirect(url)


def _job_or_404(pk: int) -> BatchJob:
    found = selectors.job(pk)
    if found is None:
        raise Http404("No such batch.")
    return found


def _row(job: BatchJob) -> dict[str, object]:
    state = selectors.job_state(job)
    return {"job": job, "state": state, "status": _status(job, state)}


def _status(job: BatchJob, state: str) -> str:
    """One sentence for the progress line, read out by screen readers as it changes."""
    files = f"{job.total} file{pluralize(job.total)}"
    if state == BatchJob.State.DONE:
        return f"Done: {files}, {job.total - job.invalid} valid, {job.invalid} with issues."
    if state == BatchJob.State.FAILED:
        return f"Stopped after {job.done} of {files}."
    if state == selectors.INTERRUPTED:
        return (
            f"Interrupted after {job.done} of {files}: the worker running it stopped. "
            "It resumes where it stopped as soon as a tasks worker runs."
        )
    if state == BatchJob.State.RUNNING and job.done:
        return f"Processed {job.done} of {files} (last: {job.current})."
    if state == BatchJob.State.RUNNING:
        return f"Processing {files}…"
    return f"Waiting to start ({files})…"


def _panel_context(job: BatchJob) -> dict[str, object]:
    """A batch with its files: those with problems first, the valid ones after (folded when many)."""
    files = selectors.job_files(job)
    good = sorted((f for f in files if f.ok), key=lambda f: f.name)
    return {
        **_row(job),
        "problems": sorted((f for f in files if not f.ok), key=lambda f: f.name),
        "valid_files": good,
        "fold_valid": len(good) > FOLD_VALID_AFTER,
    }


@require_GET
@role_required(roles.USE_INVOICES)
def batch(request: HttpRequest, pk: int) -> HttpResponse:
    """One batch: its progress and per-file outcomes (`?partial=1`: the panel alone, for polling)."""
    panel = _panel_context(_job_or_404(pk))
    if request.GET.get("partial"):
        return render(request, "dashboard/_batch.html", panel)
    return render(request, "dashboard/batch.html", {"page": "invoices", "panel": panel})


@require_GET
@role_required(roles.USE_INVOICES)
def batch_manifest(request: HttpRequest, pk: int) -> FileResponse:
    job = _job_or_404(pk)
    path = selectors.job_manifest(job)
    if path is None:
        raise Http404("This batch has no manifest yet.")
    return FileResponse(
        path.open("rb"),
        content_type="application/json",
        as_attachment=True,
        filename=f"manifest-{job.pk}.json",
    )


@require_GET
@role_required(roles.USE_INVOICES)
def batch_archive(request: HttpRequest, pk: int) -> FileResponse:
    job = _job_or_404(pk)
    archive = selectors.job_archive(job)
    if archive is None:
        raise Http404("This batch has not finished.")
    return FileResponse(
        archive, content_type="application/zip", as_attachment=True, filename=f"fel-batch-{job.pk}.zip"
    )


@require_GET
@role_required(roles.USE_INVOICES)
def batch_file_pdf(request: HttpRequest, pk: int, position: int) -> FileResponse:
    found = selectors.job_file_pdf(_job_or_404(pk), position)
    if found is None:
        raise Http404("This file has no PDF.")
    path, name = found
    return FileResponse(path.open("rb"), content_type="application/pdf", as_attachment=True, filename=name)


@require_GET
@role_required(roles.USE_INVOICES)
def invoice_pdf(request: HttpRequest, pk: int, inline: bool = False) -> FileResponse:
    """The invoice's PDF, downloaded, or (`inline`: the "View" link) shown by the browser."""
    invoice = Invoice.objects.defer("xml").filter(pk=pk).first()
    pdf = selectors.invoice_pdf(invoice) if invoice else None
    if invoice is None or pdf is None:
        raise Http404("This invoice has no PDF.")
    name = f"{invoice.tipo}-{invoice.serie}-{invoice.numero}.pdf"
    return FileResponse(
        pdf.open("rb"), content_type="application/pdf", filename=name, as_attachment=not inline
    )
