"""`fel_batch` jobs on uploaded files, for the dashboard and the REST API; the only writer of
`BatchJob` and `BatchJobFile` rows.

The uploads are kept as `FEL_ROOT/uploads/<folder>/*.xml`, then `fel.services.run_batch` (the
engine of the `fel_batch` MCP tool) turns them into PDFs in `<FEL_OUTPUT_DIR>/uploads/<folder>/`
with their manifest.json. The job runs as a task of Django's Tasks framework (the `django-tasks`
backport on Django 5.2; settings.TASKS), so any tasks worker runs it, not the process that
received the upload. Progress and each file's outcome are stored as they come, so any hub
process can report them and a reloaded page finds the job again. A file that cannot be read is
one failed entry, never the end of the batch.

A worker may die mid-batch (a SIGKILL, a lost machine), leaving its task claimed for ever: the
task keeps a heartbeat in its job (`updated_at`, every third of TASKS_LEASE_SECONDS), and
`resume_abandoned`, which tasks workers run at start and every third of the lease, hands a job
silent for longer than the lease to a new task. Each file's `BatchJobFile` row is committed
with its invoice and audit event, and a resumed task skips the files that have one: every file
is processed once, however often the batch is resumed.

On the database backend a task is queued in the transaction that makes (or releases) its job;
on RQ (TASKS_BACKEND=rq) only after it commits, since a worker could otherwise take the task
from Redis before its job is visible and find nothing to claim.
"""

from __future__ import annotations

import logging
import secrets
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Protocol

from django.conf import settings
from django.db import DatabaseError, connections, transaction
from django.db.models import Q
from django.utils import timezone
from django_tasks import TaskContext, task
from django_tasks.exceptions import TaskResultDoesNotExist

from audit.services import record_event
from fel import services
from fel.batch import ManifestEntry, xml_files
from fel.config import output_dir
from fel.errors import FelError
from fel.models import BatchJob, BatchJobFile
from fel.paths import display_path, existing_dir, fel_root, writable_dir
from fel.uploads import UPLOAD_DIR, safe_name

logger = logging.getLogger(__name__)


class Upload(Protocol):
    """What Django's UploadedFile offers and a job needs."""

    name: str | None

    def chunks(self) -> Iterator[bytes]: ...


def start_job(uploads: Sequence[Upload], *, actor: str, interface: str) -> BatchJob:
    """Keep the uploads under FEL_ROOT, record a queued job and enqueue its task; the job as
    accepted."""
    return _start(lambda: create_job(uploads, actor=actor, interface=interface))


def start_folder_job(
    dir_xml: str,
    out_dir: str | None,
    *,
    actor: str,
    interface: str,
    then: Callable[[BatchJob], None] = lambda job: None,
) -> BatchJob:
    """A job on a folder already under FEL_ROOT (the `fel_batch` MCP tool called as a task):
    its PDFs go to `out_dir` (FEL_OUTPUT_DIR by default), as the in-call tool puts them; `then`
    runs in the transaction that records the job (what links to it is saved with it or not at
    all). Raises FelError when the folder is not there or the output cannot be written."""
    root = fel_root()
    xml_dir = existing_dir(dir_xml, "XML")
    target = writable_dir(out_dir or output_dir(), "salida")

    def create() -> BatchJob:
        job = BatchJob.objects.create(
            folder=_new_folder(),
            created_by=actor[:150],
            interface=interface,
            total=len(xml_files(xml_dir)),
            xml_dir=str(xml_dir.relative_to(root)),
            out_dir=str(target.relative_to(root)),
        )
        then(job)
        return job

    return _start(create)


def _start(create: Callable[[], BatchJob]) -> BatchJob:
    """Record a queued job (`create`) and enqueue its task. With the database backend, in one
    transaction (a worker sees the task and its job together); with a queue outside the
    database (RQ), once the job is committed, a failure to enqueue failing the job."""
    if not _queue_outside_database():
        with transaction.atomic():
            job = create()
            _queued(job.pk, run_batch_job.enqueue(job.pk).id)
        return job
    with transaction.atomic():
        job = create()
    try:
        queued = run_batch_job.enqueue(job.pk)
    except Exception:
        now = timezone.now()
        BatchJob.objects.filter(pk=job.pk, state=BatchJob.State.QUEUED).update(
            state=BatchJob.State.FAILED, error=_NOT_QUEUED, finished_at=now, updated_at=now
        )
        raise
    _queued(job.pk, queued.id)
    return job


def _queued(job_id: int, task_id: str) -> None:
    """Name the task just queued for a job that no task has taken yet, so that a task the queue
    loses (Redis restarted without its data) can be told from one still waiting its turn."""
    BatchJob.objects.filter(pk=job_id, state=BatchJob.State.QUEUED, task_id="").update(task_id=task_id)


def _lost(task_id: str) -> bool:
    """Whether the queue no longer holds `task_id` waiting: it is unknown to the backend, or it
    ended without taking its job."""
    try:
        result = run_batch_job.get_result(task_id)
    except TaskResultDoesNotExist:
        return True
    return result.is_finished


def cancel_job(job_id: int) -> bool:
    """Stop a job that is not over: it ends failed ("cancelled") at once, and its task, if one
    runs it, stops before its next file (the files done stay done, with their invoices);
    whether it was stopped. Audited as its end, once."""
    now = timezone.now()
    with transaction.atomic():
        ended = BatchJob.objects.filter(
            pk=job_id, state__in=[BatchJob.State.QUEUED, BatchJob.State.RUNNING]
        ).update(state=BatchJob.State.FAILED, error=CANCELLED, current="", finished_at=now, updated_at=now)
        if ended:
            _audit_end(BatchJob.objects.get(pk=job_id))
    return bool(ended)


CANCELLED = "Lote cancelado por quien lo pidió."
_NOT_QUEUED = "No se pudo encolar el lote (cola de tareas inaccesible); vuelva a subirlo."


def _queue_outside_database() -> bool:
    """Whether the tasks queue lies outside the hub's database (RQ on Redis): a task queued
    there inside a transaction could be taken before the transaction commits and find no job
    to claim, so it is queued only after the commit.

    RQ's module (and Redis's client with it) is looked up, not imported: making a backend of
    RQ loads it, so it is there whenever the backend is RQ's, and importing it at the top cost
    every command of the hub about 95 ms of CPU at start."""
    backend = run_batch_job.get_backend()
    rq = sys.modules.get("django_tasks_rq")
    return rq is not None and isinstance(backend, rq.RQBackend)


def _new_folder() -> str:
    return f"{timezone.now():%Y%m%d-%H%M%S}-{secrets.token_hex(4)}"


def create_job(uploads: Sequence[Upload], *, actor: str, interface: str) -> BatchJob:
    if not uploads:
        raise FelError("Elija al menos un archivo XML.")
    folder = _new_folder()
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


@task(takes_context=True)
def run_batch_job(context: TaskContext, job_id: int) -> None:
    """The task of a job: runs it to its end, or resumes it where a dead worker left it."""
    run_job(job_id, task_id=str(context.task_result.id))


def lease() -> timedelta:
    """How long a running job may stay silent before it counts as abandoned."""
    return timedelta(seconds=settings.TASKS_LEASE_SECONDS)


def run_job(job_id: int, *, task_id: str) -> None:
    """Run the job to its end (done or failed) as task `task_id`, skipping the files a task
    before it finished. A job that is finished, or held by another task, is left alone."""
    now = timezone.now()
    claimed = (
        BatchJob.objects.filter(pk=job_id, state__in=[BatchJob.State.QUEUED, BatchJob.State.RUNNING])
        .filter(Q(task_id="") | Q(task_id=task_id))
        .update(state=BatchJob.State.RUNNING, task_id=task_id, updated_at=now)
    )
    if not claimed:
        return
    BatchJob.objects.filter(pk=job_id, started_at=None).update(started_at=now)
    job = BatchJob.objects.get(pk=job_id)
    heartbeat = _Heartbeat(job_id, task_id)
    heartbeat.start()
    try:
        _run(job, task_id)
    finally:
        heartbeat.stop()


def _run(job: BatchJob, task_id: str) -> None:
    recorder = _Recorder(job, task_id)
    root = fel_root()
    try:
        outcome = services.run_batch(
            str(root / job.xml_dir),
            str(root / job.out_dir),
            actor=job.created_by,
            interface=job.interface,
            progress=recorder.progress,
            on_entry=recorder.entry,
            earlier=recorder.earlier(),
        )
    except _Superseded:
        logger.warning("FEL batch job %s was cancelled or handed over; task %s stops", job.pk, task_id)
    except FelError as exc:
        done, invalid = recorder.position, recorder.invalid
        _finish(job, task_id, BatchJob.State.FAILED, error=str(exc), done=done, invalid=invalid)
    except Exception:
        logger.exception("FEL batch job %s failed", job.pk)
        _finish(
            job,
            task_id,
            BatchJob.State.FAILED,
            error="Error interno al procesar el lote; los detalles están en el registro del hub.",
            done=recorder.position,
            invalid=recorder.invalid,
        )
    else:
        _finish(
            job,
            task_id,
            BatchJob.State.DONE,
            done=outcome.count,
            invalid=outcome.invalid,
            manifest_path=str(outcome.manifest_path.relative_to(root)),
        )


def resume_abandoned() -> list[int]:
    """Hand to a new task each running job silent for longer than the lease (its worker died)
    and each job queued for longer than the lease whose task the queue lost; the jobs resumed.
    The job is queued again until that task claims it, so it is handed over once however long
    the queue keeps it waiting; several workers may run this at once, and of them one hands it
    over."""
    stale = timezone.now() - lease()
    fields = ("pk", "state", "task_id", "updated_at")
    silent = BatchJob.objects.filter(state=BatchJob.State.RUNNING, updated_at__lt=stale).values_list(*fields)
    waiting = (
        BatchJob.objects.filter(state=BatchJob.State.QUEUED, updated_at__lt=stale)
        .exclude(task_id="")
        .values_list(*fields)
    )
    lost = [job for job in waiting if _lost(job[2])]
    return [job_id for job_id, *held in [*silent, *lost] if _hand_over(job_id, *held)]


def _hand_over(job_id: int, state: str, old_task: str, since: datetime) -> bool:
    """Queue the job again for any task (as long as nobody touched it since `since`) and
    enqueue one; whether it was handed over."""
    after_commit = _queue_outside_database()
    with transaction.atomic():
        released = BatchJob.objects.filter(pk=job_id, state=state, task_id=old_task, updated_at=since).update(
            task_id="", state=BatchJob.State.QUEUED, updated_at=timezone.now()
        )
        if released and not after_commit:
            _queued(job_id, run_batch_job.enqueue(job_id).id)
    if not released or (after_commit and not _enqueue_released(job_id, state, old_task, since)):
        return False
    why = "went silent" if state == BatchJob.State.RUNNING else "was lost by the queue"
    logger.warning("FEL batch job %s: task %s %s; resumed in a new task", job_id, old_task, why)
    return True


def _enqueue_released(job_id: int, state: str, old_task: str, since: datetime) -> bool:
    """Enqueue a new task for a job just released; when the queue refuses it, give the job back
    to its old task as it was, for the next look to try again."""
    try:
        queued = run_batch_job.enqueue(job_id)
    except Exception:
        logger.warning(
            "FEL batch job %s: could not queue its resumption; retrying later", job_id, exc_info=True
        )
        BatchJob.objects.filter(pk=job_id, state=BatchJob.State.QUEUED, task_id="").update(
            state=state, task_id=old_task, updated_at=since
        )
        return False
    _queued(job_id, queued.id)
    return True


class _Superseded(Exception):
    """The job was handed to another task (this one was taken for dead), or cancelled: stop,
    record nothing."""


class _Heartbeat:
    """Touches the job every third of the lease while its task runs (a slow file included)."""

    def __init__(self, job_id: int, task_id: str) -> None:
        self.job_id, self.task_id = job_id, task_id
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._beat, name=f"fel-batch-{job_id}-heartbeat", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.stopped.set()
        self.thread.join()

    def _beat(self) -> None:
        try:
            while not self.stopped.wait(lease().total_seconds() / 3):
                try:
                    _touch(self.job_id, self.task_id)
                except _Superseded:
                    return  # the task sees it at its next file
                except DatabaseError:
                    logger.warning("FEL batch job %s: heartbeat not recorded", self.job_id, exc_info=True)
        finally:
            connections.close_all()  # this thread's own connections


def _touch(job_id: int, task_id: str, **fields: object) -> None:
    """Update the job as its task; raises `_Superseded` when another task holds it now, or it
    was cancelled."""
    held = BatchJob.objects.filter(pk=job_id, task_id=task_id, state=BatchJob.State.RUNNING).update(
        updated_at=timezone.now(), **fields
    )
    if not held:
        raise _Superseded(job_id)


class _Recorder:
    """Stores each manifest entry and the counters as `run_batch` reports them."""

    def __init__(self, job: BatchJob, task_id: str) -> None:
        self.job, self.task_id = job, task_id
        self.position = job.files.count()
        self.invalid = job.files.filter(ok=False).count()

    def earlier(self) -> list[ManifestEntry]:
        """The manifest entries of the files a task before this one finished."""
        root = fel_root()
        xml_dir, out_dir = root / self.job.xml_dir, root / self.job.out_dir
        return [
            {
                "xml": display_path(xml_dir / row.name),
                "xml_sha256": row.xml_sha256 or None,
                "pdf": display_path(out_dir / row.pdf_name) if row.pdf_name else None,
                "pdf_sha256": row.pdf_sha256 or None,
                "ok": row.ok,
                "issues": [*row.issues, *([row.error] if row.error else [])],
                "totals": row.totals,
                "authorization_number": row.authorization_number or None,
                "error": row.error or None,
            }
            for row in self.job.files.all()
        ]

    def entry(self, entry: ManifestEntry) -> None:
        """The file's marker, in its invoice's transaction, while this task still holds the job."""
        _touch(self.job.pk, self.task_id)
        BatchJobFile.objects.create(job=self.job, position=self.position + 1, **_file_fields(entry))
        self.position += 1
        self.invalid += not entry["ok"]

    def progress(self, done: int, total: int, name: str) -> None:
        _touch(self.job.pk, self.task_id, done=done, total=total, invalid=self.invalid, current=name[:200])


def _finish(job: BatchJob, task_id: str, state: str, **fields: object) -> None:
    """End the job and audit it, once: only the task holding the running job does."""
    now = timezone.now()
    with transaction.atomic():
        ended = BatchJob.objects.filter(pk=job.pk, task_id=task_id, state=BatchJob.State.RUNNING).update(
            state=state, finished_at=now, updated_at=now, **fields
        )
        if not ended:
            return
        job.refresh_from_db()
        _audit_end(job)


def _audit_end(job: BatchJob) -> None:
    """The job's end, in the audit trail and on the dashboard's live updates."""
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
