"""A `fel_batch` call made as a task of MCP's tasks extension outlives its process: asked over
HTTP of a real `serve`, whose process is killed (SIGKILL) mid-batch, the task is answered by
the next `serve`, whose tasks worker resumes the batch job the task follows: `tasks/get` ends
`completed` with the in-call tool's result, every file processed exactly once."""

import json
import re
import time

import pytest

from audit.models import Event
from fel.models import BatchJob, BatchJobFile
from mcp_endpoint.engine import jsonrpc
from tests.fel_support import REAL
from tests.hub_support import HubProcess
from tests.mcp_endpoint.test_mcp_tasks_live import rpc

pytestmark = pytest.mark.live
FILES = 40


def poll(url: str, token: str, task_id: str, until, timeout: float) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        status, answer = rpc(url, token, "tasks/get", task_id, taskId=task_id)
        assert status == 200, answer
        if until(answer["result"]):
            return answer["result"]
        assert time.monotonic() < deadline, answer
        time.sleep(0.05)


def files_done(task: dict) -> int:
    found = re.match(r"(\d+) of \d+ files", task.get("statusMessage", ""))
    return int(found.group(1)) if found else 0


def test_a_batch_task_whose_serve_is_killed_completes_on_the_next_serve(live_env, make_token, tmp_path):
    root = tmp_path / "data"
    folder = root / "lote"
    folder.mkdir(parents=True)
    names = [f"{i:02d}-{REAL[i % len(REAL)].name}" for i in range(FILES)]
    for i, name in enumerate(names):
        (folder / name).write_bytes(REAL[i % len(REAL)].read_bytes())
    env = {
        **live_env,
        "TASKS_BACKEND": "database",
        "FEL_ROOT": str(root),
        "FEL_OUTPUT_DIR": "out",
        "FEL_BATCH_WORKERS": "1",  # in the task's own process: the SIGKILL takes the whole batch
        "TASKS_LEASE_SECONDS": "3",  # silent this long: its worker is taken for dead
        "MCP_RATE_LIMIT": "0",
    }
    token, eve = make_token(scopes=["fel"]), make_token(name="eve", scopes=["fel"])
    hub = HubProcess(env, serve=True)
    try:
        hub.start()
        url = hub.base + "/mcp"
        status, created = rpc(
            url, token, "tools/call", "fel_batch", name="fel_batch", arguments={"dir_xml": "lote"}
        )
        assert status == 200 and created["result"]["resultType"] == "task", created
        task_id = created["result"]["taskId"]
        running = poll(url, token, task_id, lambda task: files_done(task) >= 3, timeout=60)
        hub.stop(kill=True)  # mid-batch, as when the machine loses the process
        stopped = BatchJob.objects.get()
        assert stopped.state == "running" and 3 <= stopped.done < FILES

        hub.start()  # a new process, with its tasks worker
        _, refused = rpc(url, eve, "tasks/get", task_id, taskId=task_id)
        task = poll(url, token, task_id, lambda task: task["status"] != "working", timeout=120)
    finally:
        hub.close()

    assert running["status"] == "working" and running["statusMessage"].endswith(f" of {FILES} files")
    assert refused["error"]["code"] == jsonrpc.INVALID_PARAMS  # only its token sees the task, anywhere
    assert task["status"] == "completed", task
    assert task["result"]["isError"] is False
    assert task["result"]["structuredContent"] == {
        "ok": True,
        "count": FILES,
        "out_dir": "out",
        "manifest_path": "out/manifest.json",
        "invalid": 0,
    }
    assert json.loads(task["result"]["content"][0]["text"]) == task["result"]["structuredContent"]
    job = BatchJob.objects.get()
    assert (job.state, job.done, job.total) == ("done", FILES, FILES)
    assert sorted(BatchJobFile.objects.filter(job=job).values_list("name", flat=True)) == names
    assert Event.objects.filter(action="fel.batch.file").count() == FILES  # each file once
    assert Event.objects.filter(action="fel.batch", target=f"batch:{job.pk}").count() == 1
    manifest = json.loads((root / "out" / "manifest.json").read_text())
    assert sorted(entry["xml"].rsplit("/", 1)[-1] for entry in manifest["files"]) == names
    assert all(entry["ok"] for entry in manifest["files"])
