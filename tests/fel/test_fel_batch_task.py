"""`fel_batch` asked as a task of MCP's tasks extension: its batch is a job on Django's Tasks
framework (the one the dashboard and REST run), which the task follows: `tasks/get` shows the
job's progress, `tasks/cancel` cancels it, and a tasks worker that takes the job later finds
nothing to do. (tests/fel/test_fel_batch_task_live.py: a task whose `serve` is killed.)"""

import asyncio
import time

import pytest
from asgiref.sync import async_to_sync
from django_tasks import TaskResultStatus
from django_tasks_db.models import DBTaskResult

from audit.models import Event
from fel.models import BatchJob, BatchJobFile
from mcp_endpoint.engine.tasks_extension import TASKS_EXTENSION
from tests.fel_support import REAL, make_root
from tests.mcp_helpers import Peer
from tests.mqtt_support import wait_until

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS_EXTENSION: {}}},
}


@pytest.fixture
def root(tmp_path, settings):
    return make_root(tmp_path, settings)


async def _start(peer: Peer, dir_xml: str) -> str:
    created = await peer.call("fel_batch", {"dir_xml": dir_xml}, _meta=META)
    assert created["result"]["resultType"] == "task", created
    return created["result"]["taskId"]


async def _get(peer: Peer, task_id: str) -> dict:
    return (await peer.request("tasks/get", {"taskId": task_id, "_meta": META}))["result"]


async def _following(peer: Peer, task_id: str) -> dict:
    """The task once its call has queued the job (a moment after the task is announced)."""
    deadline = time.monotonic() + 30
    while "statusMessage" not in (task := await _get(peer, task_id)):
        assert task["status"] == "working" and time.monotonic() < deadline, task
        await asyncio.sleep(0.05)
    return task


@pytest.mark.django_db
def test_a_queued_batch_task_shows_its_job_and_cancelling_it_cancels_the_job(root):
    """No tasks worker runs: the job waits in the queue, the task is working on it; cancelled,
    the job ends (once, audited) and a worker that takes its task later does nothing."""
    from fel import batch_jobs

    async def scenario() -> tuple[dict, dict, dict]:
        peer = Peer()
        task_id = await _start(peer, "data/xml")
        working = await _following(peer, task_id)
        ack = await peer.request("tasks/cancel", {"taskId": task_id, "_meta": META})
        return working, ack, await _get(peer, task_id)

    working, ack, cancelled = async_to_sync(scenario)()
    assert working["status"] == "working"
    assert working["statusMessage"] == f"0 of {len(REAL)} files"
    assert ack["result"]["resultType"] == "complete"
    assert cancelled["status"] == "cancelled"
    job = BatchJob.objects.get()
    assert job.state == "failed" and job.error == batch_jobs.CANCELLED

    queued_task = job.task_id  # the task queued for it, which no worker took
    assert queued_task
    batch_jobs.run_job(job.pk, task_id=queued_task)  # taken at last
    job.refresh_from_db()
    assert job.state == "failed" and job.task_id == queued_task and not BatchJobFile.objects.exists()
    assert Event.objects.filter(action="fel.batch", target=f"batch:{job.pk}").count() == 1


def test_cancelling_a_running_batch_task_stops_it_between_files(root, settings, transactional_db):
    """A tasks worker (as `serve` runs one) is mid-batch when the task is cancelled: the batch
    stops before its next file; the files done stay done, and the task stays cancelled."""
    from homehub.tasks_worker import TasksWorker

    folder = root / "many"
    folder.mkdir()
    for i in range(40):
        sample = REAL[i % len(REAL)]
        (folder / f"{i:02d}-{sample.name}").write_bytes(sample.read_bytes())
    settings.FEL_BATCH_WORKERS = 1
    worker = TasksWorker(interval=0.1)
    worker.start()
    try:

        async def scenario() -> tuple[dict, dict]:
            peer = Peer()
            task_id = await _start(peer, "data/many")
            deadline = time.monotonic() + 60
            while (task := await _get(peer, task_id)).get("statusMessage", "0 of")[:2] in {"0 ", "1 "}:
                assert task["status"] == "working" and time.monotonic() < deadline, task
                await asyncio.sleep(0.05)
            await peer.request("tasks/cancel", {"taskId": task_id, "_meta": META})
            return task, await _get(peer, task_id)

        running, cancelled = async_to_sync(scenario)()
        wait_until(
            lambda: DBTaskResult.objects.get().status == TaskResultStatus.SUCCESSFUL,
            timeout=30,
            what="the batch's task ended",
        )
    finally:
        worker.stop()
    assert running["status"] == "working" and running["statusMessage"].endswith(" of 40 files")
    assert cancelled["status"] == "cancelled"
    job = BatchJob.objects.get()
    done = BatchJobFile.objects.filter(job=job).count()
    assert job.state == "failed" and 2 <= done < 40
    assert Event.objects.filter(action="fel.batch.file").count() == done
