"""Batches of uploaded FEL files as server-side `fel_batch` jobs: the dashboard's Invoices
page and `/api/invoices/batches` (upload, progress, per-file outcomes, manifest, PDFs, ZIP)."""

import io
import json
import time
import zipfile
from datetime import timedelta
from unittest.mock import ANY

import pytest
import redis
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone
from rq import Worker

from audit.models import Event
from fel.models import BatchJob, Invoice
from tests.fel_support import BROKEN, REAL, SAT_SAMPLE, make_root
from tests.home.test_api_home import bearer
from tests.mqtt_support import wait_until


@pytest.fixture
def fel_root(tmp_path, settings):
    return make_root(tmp_path, settings)


def upload(path, name=None, data=None):
    return SimpleUploadedFile(name or path.name, data or path.read_bytes(), content_type="application/xml")


def streamed(response) -> bytes:
    return b"".join(response.streaming_content)


@pytest.mark.django_db
def test_dashboard_batch_reports_each_file_and_offers_downloads(staff_client, fel_root, inline_batches):
    files = [upload(SAT_SAMPLE), upload(BROKEN[0]), upload(SAT_SAMPLE, "junk.xml", b"<not-xml")]
    response = staff_client.post("/invoices/", {"files": files}, HTTP_ACCEPT="application/json")
    assert response.status_code == 202
    body = response.json()
    job = BatchJob.objects.get(pk=body["id"])
    assert (job.state, job.total, job.done, job.invalid) == ("done", 3, 3, 2)
    assert job.created_by == "boss" and job.interface == "dashboard"

    panel = staff_client.get(body["panel"]).content.decode()
    assert 'data-state="done"' in panel and "Done: 3 files, 1 valid, 2 with issues." in panel
    assert SAT_SAMPLE.name in panel and "could not be read" in panel and "1 issue" in panel
    assert "<html" not in panel  # the panel alone, for polling

    page = staff_client.get("/invoices/").content.decode()  # a reload finds the batch again
    assert f'data-batch="{job.pk}"' in page and Invoice.objects.get(valid=True).emisor_name[:20] in page

    manifest = json.loads(streamed(staff_client.get(f"/invoices/batches/{job.pk}/manifest.json")))
    assert manifest["count"] == 3 and manifest["valid"] == 1 and manifest["invalid"] == 2
    by_name = {e["xml"].rsplit("/", 1)[-1]: e for e in manifest["files"]}
    assert by_name["junk.xml"]["error"] and by_name["junk.xml"]["pdf"] is None
    good = by_name[SAT_SAMPLE.name]
    assert good["ok"] and len(good["xml_sha256"]) == 64 and len(good["pdf_sha256"]) == 64

    first = job.files.get(name=SAT_SAMPLE.name)
    pdf = staff_client.get(f"/invoices/batches/{job.pk}/files/{first.position}/pdf/")
    assert pdf.status_code == 200 and "attachment" in pdf["Content-Disposition"]
    assert streamed(pdf).startswith(b"%PDF")
    archive = zipfile.ZipFile(io.BytesIO(streamed(staff_client.get(f"/invoices/batches/{job.pk}/pdfs.zip"))))
    names = set(archive.namelist())
    assert "manifest.json" in names and f"pdf/{SAT_SAMPLE.stem}.pdf" in names
    assert not any(n.startswith("pdf/junk") for n in names)

    assert Event.objects.filter(action="fel.batch.file", interface="dashboard", actor="boss").exists()
    event = Event.objects.get(action="fel.batch")
    assert event.after == {"state": "done", "count": 3, "invalid": 2} and event.actor == "boss"

    # the home's Activity: the batch is one row leading to it, not one row per file
    activity = staff_client.get("/activity/").content.decode()
    assert "boss processed a batch of 3 invoices (2 with issues) from the dashboard" in activity
    assert f'href="/invoices/batches/{job.pk}/"' in activity and "<code>fel.batch.file</code>" not in activity
    files = staff_client.get("/activity/", {"action": "fel.batch.file"}).content.decode()
    assert "<code>fel.batch.file</code>" in files  # asked for by name, the files are there


@pytest.mark.django_db
def test_uploads_stay_inside_fel_root_and_same_names_do_not_clash(staff_client, fel_root, inline_batches):
    evil = [upload(REAL[0], "../../escape.xml"), upload(REAL[1], "../../escape.xml")]
    response = staff_client.post("/invoices/", {"files": evil})
    job = BatchJob.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/invoices/batches/{job.pk}/"
    assert sorted(job.files.values_list("name", flat=True)) == ["escape-2.xml", "escape.xml"]
    assert (fel_root / job.xml_dir / "escape.xml").is_file()
    assert not (fel_root.parent / "escape.xml").exists()
    assert (fel_root / job.out_dir).is_relative_to(fel_root)
    page = staff_client.get(f"/invoices/batches/{job.pk}/").content.decode()
    assert "escape-2.xml" in page and "manifest.json" in page


@pytest.mark.django_db
def test_dashboard_refuses_an_empty_upload_and_unknown_batches(staff_client, fel_root):
    answer = staff_client.post("/invoices/", {}, HTTP_ACCEPT="application/json")
    assert answer.status_code == 400 and answer.json()["error"] == "Choose at least one XML file."
    assert (
        "Choose at least one XML file." in staff_client.post("/invoices/", {}, follow=True).content.decode()
    )
    for url in ["/invoices/batches/9/", "/invoices/batches/9/manifest.json", "/invoices/batches/9/pdfs.zip"]:
        assert staff_client.get(url).status_code == 404
    assert BatchJob.objects.count() == 0


@pytest.mark.django_db
def test_running_and_abandoned_batches(staff_client, fel_root):
    running = BatchJob.objects.create(
        folder="a", created_by="boss", interface="dashboard", state="running", total=4, done=1,
        current="x.xml", xml_dir="uploads/a", out_dir="out/uploads/a",
    )  # fmt: skip
    page = staff_client.get(f"/invoices/batches/{running.pk}/").content.decode()
    assert "Processed 1 of 4 files (last: x.xml)." in page
    assert '<meta http-equiv="refresh"' in page  # without JavaScript the page refreshes itself
    assert staff_client.get(f"/invoices/batches/{running.pk}/pdfs.zip").status_code == 404
    BatchJob.objects.filter(pk=running.pk).update(updated_at=timezone.now() - timedelta(hours=1))
    page = staff_client.get(f"/invoices/batches/{running.pk}/").content.decode()
    assert "Interrupted after 1 of 4 files" in page and "http-equiv" not in page


@pytest.mark.django_db
def test_rest_batch_with_scopes_and_polling(client, fel_root, inline_batches):
    auth = bearer(["fel"])
    files = [upload(path) for path in [*REAL[:2], BROKEN[0]]]
    assert client.post("/api/invoices/batches", {"files": files}, **bearer(["read"])).status_code == 403
    response = client.post(
        "/api/invoices/batches", {"files": [upload(p) for p in [*REAL[:2], BROKEN[0]]]}, **auth
    )
    assert response.status_code == 202, response.content
    assert response.json()["state"] == "queued" and response.json()["total"] == 3
    job = client.get(f"/api/invoices/batches/{response.json()['id']}", **auth).json()
    assert job["state"] == "done" and job["invalid"] == 1
    assert [f["position"] for f in job["files"]] == [1, 2, 3]
    assert all(len(f["xml_sha256"]) == 64 for f in job["files"])
    later = client.get(f"/api/invoices/batches/{job['id']}", {"since": 2}, **auth).json()
    assert [f["position"] for f in later["files"]] == [3]
    listed = client.get("/api/invoices/batches", **auth).json()
    assert listed["count"] == 1 and listed["items"][0]["files"] == []
    manifest = json.loads(streamed(client.get(f"/api/invoices/batches/{job['id']}/manifest", **auth)))
    assert manifest["count"] == 3
    archive = client.get(f"/api/invoices/batches/{job['id']}/archive", **auth)
    assert archive.status_code == 200 and archive["Content-Type"] == "application/zip"
    with_pdf = next(f for f in job["files"] if f["has_pdf"])
    pdf = client.get(f"/api/invoices/batches/{job['id']}/files/{with_pdf['position']}/pdf", **auth)
    assert streamed(pdf).startswith(b"%PDF")
    assert client.get("/api/invoices/batches/999", **auth).status_code == 404
    assert client.get(f"/api/invoices/batches/{job['id']}/files/99/pdf", **auth).status_code == 404
    assert Event.objects.filter(action="fel.batch", interface="rest", actor="integrator").exists()
    assert client.post("/api/invoices/batches", {}, **auth).status_code == 422


@pytest.mark.django_db
def test_rest_refuses_too_many_files(client, fel_root, settings):
    settings.DATA_UPLOAD_MAX_NUMBER_FILES = 2
    files = [upload(SAT_SAMPLE, f"f{i}.xml") for i in range(3)]
    response = client.post("/api/invoices/batches", {"files": files}, **bearer(["fel"]))
    assert response.status_code == 413 and "at most 2" in response.json()["detail"]


def rq_queue(settings, url: str) -> None:
    """The tasks queue on RQ at `url`, as TASKS_BACKEND=rq configures it."""
    settings.TASKS_BACKEND = "rq"
    settings.TASKS = {"default": {"BACKEND": "django_tasks_rq.RQBackend", "QUEUES": ["default"]}}
    settings.RQ_QUEUES = {"default": {"URL": url, "DEFAULT_TIMEOUT": -1}}


@pytest.mark.parametrize("queue", ["database", "rq"])
def test_a_batch_runs_in_the_background(request, transactional_db, client, fel_root, settings, queue):
    """Without the inline fixture: a tasks worker (as `serve` runs one, in a thread) takes the
    job from the queue, in the database or on RQ, while the caller polls."""
    from homehub.tasks_worker import TasksWorker

    if queue == "rq":
        rq_queue(settings, request.getfixturevalue("redis_url"))
    settings.FEL_BATCH_WORKERS = 1
    worker = TasksWorker(interval=0.1)
    worker.start()
    auth = bearer(["fel"])
    response = client.post("/api/invoices/batches", {"files": [upload(p) for p in REAL]}, **auth)
    assert response.status_code == 202
    job_id = response.json()["id"]
    deadline = time.monotonic() + 60
    while (job := client.get(f"/api/invoices/batches/{job_id}", **auth).json())["state"] != "done":
        assert job["state"] in {"queued", "running"} and time.monotonic() < deadline
        time.sleep(0.1)
    worker.stop()
    if queue == "rq":  # it has left the queue (RQ's register of workers), never to take another task
        connection = redis.Redis.from_url(settings.RQ_QUEUES["default"]["URL"])
        wait_until(lambda: not Worker.all(connection=connection), timeout=10, what="the worker gone")
    assert job["done"] == len(REAL) and job["invalid"] == 0 and len(job["files"]) == len(REAL)


@pytest.mark.django_db
def test_a_batch_whose_worker_died_is_resumed_once_without_its_files_done(fel_root, inline_batches):
    """A running job whose task went silent (its worker died after one file) goes to a new task,
    which processes only the files left; a task that no longer holds the job does nothing."""
    from fel import batch_jobs

    job = batch_jobs.create_job([upload(p) for p in REAL[:3]], actor="boss", interface="rest")
    BatchJob.objects.filter(pk=job.pk).update(
        state="running", task_id="dead", done=1, updated_at=timezone.now() - timedelta(minutes=5)
    )
    job.files.create(position=1, name=REAL[0].name, ok=True, xml_sha256="a" * 64)  # its marker
    batch_jobs.run_job(job.pk, task_id="another")  # not the job's task: leaves it alone
    assert job.files.count() == 1 and BatchJob.objects.get(pk=job.pk).task_id == "dead"

    assert batch_jobs.resume_abandoned() == [job.pk]
    job.refresh_from_db()
    assert (job.state, job.done, job.total, job.invalid) == ("done", 3, 3, 0)
    files = list(job.files.values_list("position", "name"))
    assert files[0] == (1, REAL[0].name) and sorted(files[1:]) == [(2, ANY), (3, ANY)]
    assert sorted(name for _, name in files) == sorted(p.name for p in REAL[:3])
    assert Event.objects.filter(action="fel.batch.file").count() == 2  # the file done is not redone
    manifest = json.loads((fel_root / job.manifest_path).read_text())
    assert manifest["count"] == 3 and {e["xml"].rsplit("/", 1)[-1] for e in manifest["files"]} == {
        p.name for p in REAL[:3]
    }
    assert batch_jobs.resume_abandoned() == []  # finished: nothing to resume


def test_a_batch_redis_refuses_fails_and_a_resumption_it_refuses_waits(transactional_db, fel_root, settings):
    """On RQ with Redis unreachable: a new batch fails at once with a clear error (never queued
    with no task behind it); a stale one stays with its dead task, to be resumed at a later look."""
    from fel import batch_jobs
    from tests.conftest import free_port

    rq_queue(settings, f"redis://127.0.0.1:{free_port()}/0")  # nothing listens there
    with pytest.raises(redis.ConnectionError):
        batch_jobs.start_job([upload(REAL[0])], actor="boss", interface="rest")
    job = BatchJob.objects.get()
    assert job.state == "failed" and "No se pudo encolar" in job.error and job.finished_at

    silent_since = timezone.now() - timedelta(minutes=5)
    BatchJob.objects.filter(pk=job.pk).update(
        state="running", task_id="dead", error="", finished_at=None, updated_at=silent_since
    )
    assert batch_jobs.resume_abandoned() == []
    job.refresh_from_db()
    assert (job.state, job.task_id, job.updated_at) == ("running", "dead", silent_since)


@pytest.mark.parametrize("queue", ["database", "rq"])
def test_a_queued_batch_whose_task_the_queue_lost_is_queued_again(
    request, transactional_db, fel_root, settings, queue
):
    """A batch waits in the queue (no worker runs) and the queue loses its task (Redis restarted
    without its data; its row deleted): once it has waited longer than the lease, it is queued
    again in a new task, which a worker then runs to its end. One whose task still waits is left
    alone, however long it waits."""
    from django_tasks_db.models import DBTaskResult

    from fel import batch_jobs
    from homehub.tasks_worker import TasksWorker

    if queue == "rq":
        rq_queue(settings, request.getfixturevalue("redis_url"))
    settings.FEL_BATCH_WORKERS = 1
    job = batch_jobs.start_job([upload(p) for p in REAL[:3]], actor="boss", interface="rest")
    job.refresh_from_db()
    lost_task = job.task_id
    assert job.state == "queued" and lost_task
    long_ago = timezone.now() - timedelta(minutes=5)
    BatchJob.objects.filter(pk=job.pk).update(updated_at=long_ago)
    assert batch_jobs.resume_abandoned() == []  # its task still waits its turn

    if queue == "rq":
        redis.Redis.from_url(settings.RQ_QUEUES["default"]["URL"]).flushdb()
    else:
        DBTaskResult.objects.filter(id=lost_task).delete()
    assert batch_jobs.resume_abandoned() == [job.pk]
    job.refresh_from_db()
    assert job.state == "queued" and job.task_id not in {"", lost_task}
    assert batch_jobs.resume_abandoned() == []  # handed over once

    worker = TasksWorker(interval=0.1)
    worker.start()
    try:
        wait_until(lambda: BatchJob.objects.get(pk=job.pk).state == "done", timeout=60, what="the batch done")
    finally:
        worker.stop()
    job.refresh_from_db()
    assert (job.done, job.total, job.invalid) == (3, 3, 0)
