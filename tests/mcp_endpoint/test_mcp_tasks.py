"""The MCP tasks extension (SEP-2663) in the engine: a call answered with a task, followed
with `tasks/get`, answered with `tasks/update`, stopped with `tasks/cancel`, and kept from
every token but the one that created it. (The conformance suite's `tasks-*` scenarios run
over HTTP in test_mcp_conformance.py.)"""

import asyncio
from datetime import timedelta
from io import StringIO

import pytest
from asgiref.sync import async_to_sync
from django.core.management import call_command
from django.utils import timezone
from pydantic import BaseModel

from mcp_endpoint.engine import jsonrpc, tasks_extension
from mcp_endpoint.engine.registry import ToolRegistry
from mcp_endpoint.engine.session import ServerSession
from mcp_endpoint.engine.tasks_extension import TASKS_EXTENSION
from mcp_endpoint.engine.tools import Caller, ToolContext, ToolResult
from mcp_endpoint.models import McpTask
from tests.mcp_helpers import ALL, tool_on

pytestmark = pytest.mark.django_db(transaction=True)  # announcements go out on commit

WITH_TASKS = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}, "extensions": {TASKS_EXTENSION: {}}},
}
WITHOUT_TASKS = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


class Sleep(BaseModel):
    seconds: float = 0


def make_registry() -> ToolRegistry:
    reg = ToolRegistry()

    @tool_on(reg, scope="read", task_support="optional")
    async def nap(args: Sleep, ctx: ToolContext) -> ToolResult:
        await asyncio.sleep(args.seconds)
        return ToolResult(text=f"slept {args.seconds}")

    @tool_on(reg, scope="control", task_support="required")
    async def ask_twice(args: Sleep, ctx: ToolContext) -> ToolResult:
        first = await ctx.request_client("elicitation/create", {"message": "one?"}, key="one")
        second = await ctx.request_client("elicitation/create", {"message": "two?"}, key="two")
        return ToolResult(text=f"{first['content']['v']} {second['content']['v']}")

    return reg


class Client:
    def __init__(self, reg: ToolRegistry, token: str, scopes=ALL) -> None:
        caller = Caller(f"token {token}", "mcp-http", frozenset(scopes), rate_key=token)
        self.session = ServerSession(caller, self._keep, tools=reg)
        self.sent: list[dict] = []

    async def _keep(self, message) -> None:
        self.sent.append(message)

    async def request(self, method: str, meta=WITH_TASKS, **params) -> dict:
        message = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": meta}}
        return await self.session.handle(message)

    async def result(self, method: str, **params) -> dict:
        answer = await self.request(method, **params)
        assert "result" in answer, answer
        return answer["result"]

    async def settled(self, task_id: str, *statuses: str) -> dict:
        for _ in range(200):
            task = await self.result("tasks/get", taskId=task_id)
            if task["status"] in statuses:
                return task
            await asyncio.sleep(0.02)
        raise AssertionError(f"task {task_id} never reached {statuses}: {task}")


def test_a_task_runs_to_its_result_and_only_its_token_sees_it():
    reg = make_registry()
    ana, eve = Client(reg, "ana"), Client(reg, "eve")

    async def scenario():
        created = await ana.result("tools/call", name="nap", arguments={"seconds": 0.1})
        assert created["resultType"] == "task" and created["status"] == "working"
        assert {"createdAt", "lastUpdatedAt", "ttlMs", "pollIntervalMs"} <= created.keys()
        done = await ana.settled(created["taskId"], "completed")
        assert done["result"]["content"] == [{"type": "text", "text": "slept 0.1"}]
        for method in ("tasks/get", "tasks/cancel"):
            refused = await eve.request(method, taskId=created["taskId"])
            assert refused["error"]["code"] == jsonrpc.INVALID_PARAMS
        refused = await eve.request("tasks/update", taskId=created["taskId"], inputResponses={})
        assert refused["error"]["code"] == jsonrpc.INVALID_PARAMS

    async_to_sync(scenario)()
    assert McpTask.objects.get().owner == "token:ana"  # the state is in the database


def test_cancel_stops_the_work_and_the_task_stays_cancelled():
    reg = make_registry()
    ana = Client(reg, "ana")

    async def scenario():
        created = await ana.result("tools/call", name="nap", arguments={"seconds": 30})
        ack = await ana.result("tasks/cancel", taskId=created["taskId"])
        assert ack == {"resultType": "complete", "_meta": ack["_meta"]}
        task = await ana.settled(created["taskId"], "cancelled")
        assert "result" not in task
        assert (await ana.result("tasks/cancel", taskId=created["taskId"]))["resultType"] == "complete"

    async_to_sync(scenario)()


def test_questions_are_asked_through_tasks_get_and_answered_with_tasks_update():
    reg = make_registry()
    ana = Client(reg, "ana")

    async def scenario():
        created = await ana.result("tools/call", name="ask_twice", arguments={})
        task_id = created["taskId"]
        for value in ("A", "B"):
            asked = await ana.settled(task_id, "input_required")
            (key,) = asked["inputRequests"]
            assert asked["inputRequests"][key]["method"] == "elicitation/create"
            answer = {"action": "accept", "content": {"v": value}}
            await ana.result("tasks/update", taskId=task_id, inputResponses={key: answer, "stray": answer})
            await ana.settled(task_id, "working", "completed")
        done = await ana.settled(task_id, "completed")
        assert done["result"]["content"][0]["text"] == "A B"

    async_to_sync(scenario)()
    assert McpTask.objects.get().input_responses == {}  # the answers are not kept past the work


def test_without_the_extension_calls_are_plain_and_task_methods_are_refused():
    reg = make_registry()
    ana = Client(reg, "ana")

    async def scenario():
        plain = await ana.result("tools/call", meta=WITHOUT_TASKS, name="nap", arguments={})
        assert plain["resultType"] == "complete" and plain["content"][0]["text"].startswith("slept 0")
        required = await ana.request("tools/call", meta=WITHOUT_TASKS, name="ask_twice", arguments={})
        assert required["error"]["code"] == jsonrpc.MISSING_REQUIRED_CLIENT_CAPABILITY
        assert required["error"]["data"] == {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}
        for method in ("tasks/get", "tasks/cancel"):
            refused = await ana.request(method, meta=WITHOUT_TASKS, taskId="x")
            assert refused["error"]["code"] == jsonrpc.MISSING_REQUIRED_CLIENT_CAPABILITY

    async_to_sync(scenario)()
    assert not McpTask.objects.exists()


def test_a_call_out_of_scope_is_refused_at_once_not_made_a_task():
    reg = make_registry()
    reader = Client(reg, "reader", scopes={"read"})

    async def scenario():
        refused = await reader.request("tools/call", name="ask_twice", arguments={})
        assert refused["error"]["code"] == jsonrpc.FORBIDDEN

    async_to_sync(scenario)()
    assert not McpTask.objects.exists()


def test_a_tool_asks_in_the_request_then_continues_as_a_task():
    reg = ToolRegistry()

    @tool_on(reg, scope="read", task_support="required", hands_off=True)
    async def greet_later(args: Sleep, ctx: ToolContext) -> ToolResult:
        answer = await ctx.request_client("elicitation/create", {"message": "name?"}, key="name")
        await ctx.continue_as_task()
        await asyncio.sleep(0.05)
        return ToolResult(text=f"Hello, {answer['content']['v']}")

    ana = Client(reg, "ana")

    async def scenario():
        asked = await ana.result("tools/call", name="greet_later", arguments={})
        assert asked["resultType"] == "input_required" and "taskId" not in asked
        answer = {"action": "accept", "content": {"v": "Alice"}}
        created = await ana.result(
            "tools/call",
            name="greet_later",
            arguments={},
            inputResponses={"name": answer},
            requestState=asked["requestState"],
        )
        assert created["resultType"] == "task" and "requestState" not in created
        done = await ana.settled(created["taskId"], "completed")
        assert done["result"]["content"][0]["text"] == "Hello, Alice"

    async_to_sync(scenario)()


def test_a_token_has_a_bounded_number_of_unfinished_tasks(settings):
    settings.MCP_MAX_CONCURRENT_CALLS = 2
    reg = make_registry()
    ana, bob = Client(reg, "ana"), Client(reg, "bob")

    async def scenario():
        first = await ana.result("tools/call", name="nap", arguments={"seconds": 30})
        second = await ana.result("tools/call", name="nap", arguments={"seconds": 30})
        refused = await ana.request("tools/call", name="nap", arguments={"seconds": 30})
        assert refused["error"]["code"] == jsonrpc.TOO_MANY_REQUESTS
        assert "resultType" in await bob.result("tools/call", name="nap", arguments={"seconds": 0})
        await ana.result("tasks/cancel", taskId=first["taskId"])
        third = await ana.result("tools/call", name="nap", arguments={"seconds": 30})
        assert third["resultType"] == "task"
        for task in (second, third):
            await ana.result("tasks/cancel", taskId=task["taskId"])

    async_to_sync(scenario)()


def test_a_listen_stream_hears_the_states_of_the_callers_own_tasks():
    reg = make_registry()
    ana, eve = Client(reg, "ana"), Client(reg, "eve")

    async def scenario():
        created = await ana.result("tools/call", name="nap", arguments={"seconds": 0.3})
        others = await eve.result("tools/call", name="nap", arguments={"seconds": 0})
        task_ids = [created["taskId"], others["taskId"], "nonexistent"]
        listen = {"notifications": {"taskIds": task_ids}, "_meta": WITH_TASKS}
        await ana.session.receive(
            {"jsonrpc": "2.0", "id": 9, "method": "subscriptions/listen", "params": listen}, parsed=True
        )
        for _ in range(200):
            heard = [m["params"] for m in ana.sent if m.get("method") == "notifications/tasks"]
            if heard and heard[-1]["status"] == "completed":
                break
            await asyncio.sleep(0.02)
        await ana.session.receive(
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}}, parsed=True
        )
        await ana.session.drain()
        return ana.sent, created["taskId"]

    sent, task_id = async_to_sync(scenario)()
    (ack,) = [m for m in sent if m.get("method") == "notifications/subscriptions/acknowledged"]
    assert ack["params"]["notifications"] == {"taskIds": [task_id]}  # eve's and unknown ones left out
    heard = [m["params"] for m in sent if m.get("method") == "notifications/tasks"]
    assert {h["taskId"] for h in heard} == {task_id}
    assert heard[0]["status"] == "working" and heard[-1]["status"] == "completed"
    assert heard[-1]["result"]["content"][0]["text"] == "slept 0.3"
    assert heard[-1]["_meta"] == {"io.modelcontextprotocol/subscriptionId": 9}


def test_the_work_and_a_listen_stream_hear_a_change_at_once_rather_than_polling(monkeypatch):
    monkeypatch.setattr(tasks_extension, "SAFETY_POLL_SECONDS", 60)  # only the announcements are left
    reg = make_registry()
    ana = Client(reg, "ana")

    async def scenario() -> list[str]:
        loop = asyncio.get_running_loop()
        created = await ana.result("tools/call", name="ask_twice", arguments={})
        task_id = created["taskId"]
        listen = {"notifications": {"taskIds": [task_id]}, "_meta": WITH_TASKS}
        await ana.session.receive(
            {"jsonrpc": "2.0", "id": 9, "method": "subscriptions/listen", "params": listen}, parsed=True
        )
        for value in ("A", "B"):
            (key,) = (await ana.settled(task_id, "input_required"))["inputRequests"]
            answered = loop.time()
            answer = {"action": "accept", "content": {"v": value}}
            await ana.result("tasks/update", taskId=task_id, inputResponses={key: answer})
            await ana.settled(task_id, "input_required" if value == "A" else "completed")
            assert loop.time() - answered < 2  # the work heard the answer, and asked again or ended
        for _ in range(100):
            heard = [m["params"]["status"] for m in ana.sent if m.get("method") == "notifications/tasks"]
            if heard[-1:] == ["completed"]:
                break
            await asyncio.sleep(0.02)
        await ana.session.receive(
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}}, parsed=True
        )
        await ana.session.drain()
        return heard

    heard = async_to_sync(scenario)()
    assert heard[-1] == "completed" and "input_required" in heard, heard


def test_an_expired_task_is_unknown_until_the_daily_pruning_deletes_it():
    reg = make_registry()
    ana = Client(reg, "ana")

    async def create() -> str:
        created = await ana.result("tools/call", name="nap", arguments={})
        await ana.settled(created["taskId"], "completed")
        return created["taskId"]

    async def refused(task_id: str) -> list[dict]:
        answers = [await ana.request(method, taskId=task_id) for method in ("tasks/get", "tasks/cancel")]
        answers.append(await ana.request("tasks/update", taskId=task_id, inputResponses={}))
        return [answer.get("error") for answer in answers]

    expired = async_to_sync(create)()
    McpTask.objects.filter(pk=expired).update(expires_at=timezone.now() - timedelta(seconds=1))
    live = async_to_sync(create)()  # a new task leaves the expired row to the pruning
    assert McpTask.objects.filter(pk=expired).exists()
    errors = async_to_sync(refused)(expired)
    assert [error["code"] for error in errors] == [jsonrpc.INVALID_PARAMS] * 3, errors
    assert all("unknown task" in error["message"] for error in errors)

    out = StringIO()
    call_command("prune_mcp_tasks", stdout=out)
    assert set(McpTask.objects.values_list("pk", flat=True)) == {live}
    assert "Deleted 1 expired MCP task" in out.getvalue()
