"""A batch outlives the process running it: posted over REST to a real `serve`, whose process is
killed (SIGKILL) mid-batch, it is resumed by another tasks worker and ends with every file
processed exactly once (one outcome row and one audit event per file): the next `serve`, or the
deployment's shape, bare daphne beside `manage.py tasks_worker`; with the queue in the database
and on RQ (Redis)."""

import shutil
import signal
import subprocess
import time

import httpx
import pytest
import redis

from audit.models import Event
from fel.models import BatchJob, BatchJobFile
from tests.conftest import free_port
from tests.fel_support import REAL
from tests.hub_support import HubProcess
from tests.mqtt_support import Process, wait_until

pytestmark = pytest.mark.live
FILES = 60


def poll(base: str, token: str, job_id: int, until, timeout: float) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        job = httpx.get(
            f"{base}/api/invoices/batches/{job_id}", headers={"Authorization": f"Bearer {token}"}, timeout=10
        ).json()
        if until(job):
            return job
        assert time.monotonic() < deadline, job
        time.sleep(0.05)


@pytest.fixture(params=["database", "rq"])
def queue_env(request, live_env) -> dict[str, str]:
    """The hub's environment with its tasks queue: in the database, or on RQ in a Redis database
    of the test's own (so that passes running side by side never share a queue)."""
    if request.param == "database":
        return {**live_env, "TASKS_BACKEND": "database"}
    return {**live_env, "TASKS_BACKEND": "rq", "TASKS_REDIS_URL": request.getfixturevalue("redis_url")}


@pytest.mark.parametrize("resumed_by", ["serve", "tasks_worker"])
def test_a_batch_killed_mid_way_resumes_on_another_worker_once_per_file(
    queue_env, make_token, tmp_path, resumed_by
):
    root = tmp_path / "data"
    root.mkdir()
    env = {
        **queue_env,
        "FEL_ROOT": str(root),
        "FEL_OUTPUT_DIR": "out",
        "FEL_BATCH_WORKERS": "1",  # in the task's own process: the SIGKILL takes the whole batch
        "TASKS_LEASE_SECONDS": "3",  # silent this long: its worker is taken for dead
        "MCP_RATE_LIMIT": "0",
    }
    token = make_token(scopes=["fel"])
    samples = [REAL[i % len(REAL)] for i in range(FILES)]
    xml = "application/xml"
    uploads = [("files", (f"{i:02d}-{p.name}", p.read_bytes(), xml)) for i, p in enumerate(samples)]
    hub, worker = HubProcess(env, serve=True), None
    try:
        hub.start()
        posted = httpx.post(
            f"{hub.base}/api/invoices/batches",
            files=uploads,
            headers={"Authorization": f"Bearer {token}"},
            timeout=60,
        )
        assert posted.status_code == 202, posted.text
        job_id = posted.json()["id"]
        poll(hub.base, token, job_id, lambda job: job["done"] >= 3, timeout=60)
        hub.stop(kill=True)  # mid-batch, as when the machine loses the process
        stopped = BatchJob.objects.get(pk=job_id)
        assert stopped.state == "running" and 3 <= stopped.done < FILES

        if resumed_by == "serve":
            hub.start()  # a new process, with its tasks worker
        else:  # bare daphne, which only queues, and a tasks worker on its own
            hub.close()
            hub = HubProcess(env)
            hub.start()
            worker = Process(["tasks_worker"], env, tmp_path / "tasks_worker.log")
        job = poll(hub.base, token, job_id, lambda job: job["state"] == "done", timeout=120)
        manifest = httpx.get(
            f"{hub.base}/api/invoices/batches/{job_id}/manifest", headers={"Authorization": f"Bearer {token}"}
        ).json()
        if worker is not None:
            assert worker.stop(signal.SIGTERM) == 0, worker.output()  # idle: it ends at once
            assert f"FEL batch job {job_id}" in worker.output()  # it said it resumed the batch
            assert f"({env['TASKS_BACKEND']} queue)" in worker.output()
    finally:
        if worker is not None:
            worker.stop()
        hub.close()

    assert (job["done"], job["total"], job["invalid"]) == (FILES, FILES, 0)
    assert [f["position"] for f in job["files"]] == list(range(1, FILES + 1))
    assert len({f["name"] for f in job["files"]}) == FILES
    assert BatchJobFile.objects.filter(job_id=job_id).count() == FILES
    file_events = Event.objects.filter(action="fel.batch.file", interface="rest")
    assert file_events.count() == FILES  # each file's invoice recorded once, not again on resume
    assert Event.objects.filter(action="fel.batch", target=f"batch:{job_id}").count() == 1
    # the manifest holds every file, those done before the crash included
    assert manifest["count"] == manifest["valid"] == FILES
    assert sorted(entry["xml"].rsplit("/", 1)[-1] for entry in manifest["files"]) == sorted(
        name for _, (name, _, _) in uploads
    )


def test_a_queue_on_redis_down_refuses_batches_until_redis_is_back(live_env, make_token, tmp_path):
    """`serve` with the queue on RQ and Redis down: an upload is refused with a server error and
    its job failed (never left queued with no task); once Redis is up, the same `serve`'s tasks
    worker runs the next batch to its end, without a restart."""
    port = free_port()
    root = tmp_path / "data"
    root.mkdir()
    env = {
        **live_env,
        "FEL_ROOT": str(root),
        "FEL_OUTPUT_DIR": "out",
        "FEL_BATCH_WORKERS": "1",
        "TASKS_BACKEND": "rq",
        "TASKS_REDIS_URL": f"redis://127.0.0.1:{port}/0",
        "MCP_RATE_LIMIT": "0",
    }
    token = make_token(scopes=["fel"])
    headers = {"Authorization": f"Bearer {token}"}
    files = [("files", (p.name, p.read_bytes(), "application/xml")) for p in REAL[:2]]
    hub, server = HubProcess(env, serve=True), None
    try:
        hub.start()
        refused = httpx.post(f"{hub.base}/api/invoices/batches", files=files, headers=headers, timeout=30)
        assert refused.status_code == 500
        failed = BatchJob.objects.get()
        assert failed.state == "failed" and "No se pudo encolar" in failed.error

        redis_server = shutil.which("redis-server") or "redis-server"
        command = [redis_server, "--port", str(port), "--save", "", "--dir", str(tmp_path)]
        server = subprocess.Popen(command, stdout=subprocess.DEVNULL)
        client = redis.Redis(port=port)
        wait_until(lambda: _pings(client), what="Redis up")
        posted = httpx.post(f"{hub.base}/api/invoices/batches", files=files, headers=headers, timeout=30)
        assert posted.status_code == 202, posted.text
        job = poll(hub.base, token, posted.json()["id"], lambda job: job["state"] == "done", timeout=60)
    finally:
        hub.close()
        if server is not None:
            server.terminate()
            server.wait(10)
    assert (job["done"], job["invalid"]) == (2, 0), hub.output()


def _pings(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except redis.ConnectionError:
        return False
