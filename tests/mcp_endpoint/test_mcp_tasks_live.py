"""The MCP tasks extension over HTTP, against a live hub with the conformance fixtures
(`slow_compute`): only the token that created a task may read, answer or cancel it, and the
task's id is its routing name (`Mcp-Name`)."""

import time

import httpx
import pytest

from mcp_endpoint.engine import jsonrpc
from mcp_endpoint.engine.tasks_extension import TASKS_EXTENSION
from tests.hub_support import CONFORMANCE_SETTINGS
from tests.mcp_endpoint.test_mcp_http import sse_messages

pytestmark = pytest.mark.live

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS_EXTENSION: {}}},
}


@pytest.fixture
def hub(live_env, request):
    live_env["DJANGO_SETTINGS_MODULE"] = CONFORMANCE_SETTINGS
    return request.getfixturevalue("daphne_server") + "/mcp"


def rpc(url: str, token: str, method: str, routed: str, **params) -> tuple[int, dict]:
    """One stateless request with its routing headers (`routed`: its `Mcp-Name`); the HTTP
    status and the answer."""
    headers = {
        "authorization": f"Bearer {token}",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": method,
        "mcp-name": routed,
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": META}}
    answer = httpx.post(url, json=body, headers=headers, timeout=10)
    if answer.headers["content-type"].startswith("text/event-stream"):
        return answer.status_code, sse_messages(answer.text)[-1]
    return answer.status_code, answer.json()


def start(url: str, token: str, seconds: float) -> tuple[int, dict]:
    arguments = {"seconds": seconds}
    return rpc(url, token, "tools/call", "slow_compute", name="slow_compute", arguments=arguments)


def test_only_the_token_that_created_a_task_may_read_or_cancel_it(hub, make_token):
    ana, eve = make_token(name="ana"), make_token(name="eve")
    status, created = start(hub, ana, 30)
    assert status == 200 and created["result"]["resultType"] == "task"
    task_id = created["result"]["taskId"]

    for method, extra in (("tasks/get", {}), ("tasks/cancel", {}), ("tasks/update", {"inputResponses": {}})):
        _, refused = rpc(hub, eve, method, task_id, taskId=task_id, **extra)
        assert refused["error"]["code"] == jsonrpc.INVALID_PARAMS, method
    _, still = rpc(hub, ana, "tasks/get", task_id, taskId=task_id)
    assert still["result"]["status"] == "working"

    status, mismatched = rpc(hub, ana, "tasks/get", "another-task", taskId=task_id)
    assert status == 400 and mismatched["error"]["code"] == jsonrpc.HEADER_MISMATCH

    _, ack = rpc(hub, ana, "tasks/cancel", task_id, taskId=task_id)
    assert ack["result"]["resultType"] == "complete" and "status" not in ack["result"]
    _, cancelled = rpc(hub, ana, "tasks/get", task_id, taskId=task_id)
    assert cancelled["result"]["status"] == "cancelled"


def test_a_task_finishes_with_its_result_read_from_any_request(hub, make_token):
    ana = make_token(name="ana")
    _, created = start(hub, ana, 0.2)
    task_id = created["result"]["taskId"]
    deadline = time.monotonic() + 10
    while True:
        _, task = rpc(hub, ana, "tasks/get", task_id, taskId=task_id)
        if task["result"]["status"] != "working" or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert task["result"]["status"] == "completed"
    assert task["result"]["result"]["content"][0]["text"].startswith("Computed")
