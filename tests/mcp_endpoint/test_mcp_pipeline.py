"""The one tool-call pipeline (mcp_endpoint.engine.pipeline), from sync code and through seed 000's line
protocol: scope, rate limit, error mapping and the audit observers, whatever the door."""

import pytest
from asgiref.sync import async_to_sync
from pydantic import BaseModel

from mcp_endpoint.engine.pipeline import InsufficientScope, RateLimited, ToolNotFound, call_tool_sync
from mcp_endpoint.engine.registry import ToolRegistry
from mcp_endpoint.engine.tool_errors import ToolError
from mcp_endpoint.engine.tools import Caller, ToolContext
from mcp_endpoint.transports.simple import handle_line
from tests.mcp_helpers import tool_on


class Name(BaseModel):
    name: str


def registry_with_observer() -> tuple[ToolRegistry, list[tuple[str, str, bool, str | None]]]:
    """A registry with a read tool, a control tool that refuses 'x', and an observer that
    records (actor, tool, is_error, text) of every audited call."""
    reg, seen = ToolRegistry(), []

    @tool_on(reg, scope="read", name="greet")
    def greet(args: Name, ctx: ToolContext) -> dict:
        return {"hello": args.name, "by": ctx.caller.actor}

    @tool_on(reg, scope="control", name="rename")
    def rename(args: Name, ctx: ToolContext) -> dict:
        if args.name == "x":
            raise ToolError("no x")
        return {"ok": True}

    async def observe(caller, tool, arguments, result, seconds):
        seen.append((caller.actor, tool.name, result.is_error, result.text))

    reg.add_observer(observe)
    return reg, seen


def reader(audited: bool = True, rate_key: str | None = None) -> Caller:
    return Caller("ana", "rest", frozenset({"read"}), audited=audited, rate_key=rate_key)


def test_a_sync_call_runs_the_tool_and_is_observed():
    reg, seen = registry_with_observer()
    result = call_tool_sync("greet", {"name": "Carlos"}, reader(), tools=reg)
    assert result.structured == {"hello": "Carlos", "by": "ana"} and not result.is_error
    assert seen == [("ana", "greet", False, None)]


def test_refusals_raise_and_the_scope_refusal_is_observed():
    reg, seen = registry_with_observer()
    with pytest.raises(ToolNotFound, match="Unknown tool: nope"):
        call_tool_sync("nope", {}, reader(), tools=reg)
    with pytest.raises(InsufficientScope) as refused:
        call_tool_sync("rename", {"name": "y"}, reader(), tools=reg)
    assert refused.value.scope == "control"
    assert seen == [("ana", "rename", True, "Insufficient scope: tool 'rename' requires the 'control' scope")]


def test_tool_errors_and_bad_arguments_are_error_results():
    reg, _ = registry_with_observer()
    caller = Caller("ana", "rest", frozenset({"read", "control"}))
    refused = call_tool_sync("rename", {"name": "x"}, caller, tools=reg)
    assert refused.is_error and refused.text == "no x"
    missing = call_tool_sync("rename", {}, caller, tools=reg)
    assert missing.is_error and missing.text == "Faltan parámetros requeridos: name"


def test_the_rate_limit_holds_for_every_door(settings, db):
    settings.MCP_RATE_LIMIT = 1
    reg, seen = registry_with_observer()
    caller = reader(rate_key="pipeline-test")
    assert not call_tool_sync("greet", {"name": "a"}, caller, tools=reg).is_error
    with pytest.raises(RateLimited):
        call_tool_sync("greet", {"name": "b"}, caller, tools=reg)
    assert [entry[2] for entry in seen] == [False, True]


def test_the_line_protocol_hides_tools_out_of_scope_with_seed_000s_text():
    reg, _ = registry_with_observer()
    answer = async_to_sync(handle_line)(
        b'{"type":"call","id":1,"tool":"rename","args":{"name":"y"}}', reader(), reg
    )
    assert answer == {"type": "error", "id": 1, "ok": False, "error": "Tool 'rename' no encontrada"}


def test_a_caller_with_a_tool_set_sees_and_calls_only_those():
    """An outbound endpoint's caller: its chosen tools only, within its scopes, in `tools/list`
    and in calls (any other is unknown to it, refused before it runs)."""
    from mcp_endpoint.engine.session import ServerSession

    reg, _ = registry_with_observer()
    caller = Caller("kitchen", "mcp-endpoint", frozenset({"read", "control"}), tools=frozenset({"greet"}))
    assert [t.name for t in reg.list_for(caller)] == ["greet"]
    with pytest.raises(ToolNotFound):
        call_tool_sync("rename", {"name": "y"}, caller, tools=reg)
    assert call_tool_sync("greet", {"name": "a"}, caller, tools=reg).structured["by"] == "kitchen"

    async def session_view():
        session = ServerSession(caller, lambda message: None, tools=reg)
        await session.handle({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}})
        listed = await session.handle({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        called = await session.handle(
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "rename", "arguments": {}}}
        )
        await session.close()
        return listed, called

    listed, called = async_to_sync(session_view)()
    assert [t["name"] for t in listed["result"]["tools"]] == ["greet"]
    assert called["error"] == {"code": -32602, "message": "Unknown tool: rename"}
