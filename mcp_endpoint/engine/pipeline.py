"""The one way a tool is called, whatever the door: every MCP transport's sessions, seed 000's
line protocol, and sync code (REST views, the dashboard, commands) through `call_tool_sync`.

`call_tool(name, arguments, ctx)` finds the tool among those the caller sees (its own tool
set, when it has one), checks the caller's scope, counts the call against the caller's rate
limit, waits for a person's confirmation when the call is dangerous (`confirmation`; and when a
tool runs another on the caller's behalf, of that call too, through `ToolContext.confirm`), runs it,
maps its failures to `isError` results, records the call's metrics and hands audited callers'
calls to the registry's observers (refusals included), before the caller answers. A call that
does not run raises a `ToolRefused` (nothing changed); each door words that for its own
protocol; a call a person did not confirm is an `isError` result the model can read.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import replace
from functools import partial
from typing import Any

from django.conf import settings

from mcp_endpoint.auth import ratelimit
from mcp_endpoint.controls import confirmation
from mcp_endpoint.engine import metrics
from mcp_endpoint.engine.from_sync import run_from_sync
from mcp_endpoint.engine.input_rounds import InputRequired
from mcp_endpoint.engine.registry import ToolRegistry, registry
from mcp_endpoint.engine.tool_errors import MissingClientCapability, ToolError
from mcp_endpoint.engine.tools import Caller, Tool, ToolContext, ToolResult

logger = logging.getLogger(__name__)


class ToolRefused(Exception):
    """The call did not run; `message` says why."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ToolNotFound(ToolRefused):
    def __init__(self, name: str) -> None:
        super().__init__(f"Unknown tool: {name}")
        self.name = name


class InsufficientScope(ToolRefused):
    def __init__(self, name: str, scope: str) -> None:
        super().__init__(f"Insufficient scope: tool '{name}' requires the '{scope}' scope")
        self.name, self.scope = name, scope


class NotConfirmed(ToolRefused):
    """A person did not confirm a dangerous call (denied it, or did not answer in time)."""

    def __init__(self, name: str, how: str) -> None:
        super().__init__(f"Not run: tool '{name}' needs a person's confirmation and was {how}")
        self.name, self.how = name, how


class RateLimited(ToolRefused):
    def __init__(self, retry_after: float) -> None:
        super().__init__(f"Rate limit exceeded for this token: retry in {retry_after:.0f} s")
        self.retry_after = retry_after


async def call_tool(
    name: str, arguments: Any, ctx: ToolContext, *, tools: ToolRegistry = registry
) -> ToolResult:
    """Call tool `name` for `ctx.caller`. Raises ToolRefused when it does not run, and lets
    InputRequired (a stateless call's question to the client), MissingClientCapability (a
    question the client cannot answer: the request fails) and cancellation through."""
    caller = ctx.caller
    tool = tools.get(name) if caller.sees(name) else None  # a tool kept from the caller is unknown to it
    if tool is None:
        metrics.record_call(metrics.UNKNOWN_TOOL, "unknown_tool", caller.interface)
        raise ToolNotFound(name)
    if tool.scope not in caller.scopes:
        metrics.record_call(name, "forbidden", caller.interface)
        await _refuse(tools, caller, tool, arguments, InsufficientScope(name, tool.scope))
    retry_after = (
        await ratelimit.aretry_after(
            caller.rate_key, settings.MCP_RATE_LIMIT, settings.MCP_RATE_WINDOW_SECONDS
        )
        if caller.rate_key
        else None
    )
    if retry_after is not None:
        metrics.record_call(name, "rate_limited", caller.interface)
        await _refuse(tools, caller, tool, arguments, RateLimited(retry_after))
    gate = confirmation.Gate(ctx)
    try:
        verdict = await gate.check(tool, arguments)
    except InputRequired:  # a stateless call's question: the client retries with the answer
        metrics.record_call(name, "input_required", caller.interface)
        raise
    if verdict is not None and not verdict.approved:
        metrics.record_call(name, "not_confirmed", caller.interface)
        refusal = NotConfirmed(name, verdict.how)
        refused = ToolResult(is_error=True, text=refusal.message, reason=refusal, confirmation=verdict.how)
        await _observe(tools, caller, tool, arguments, refused, 0.0)
        return refused
    approved_by = verdict.by if verdict is not None else None
    ctx = replace(ctx, confirmer=partial(_confirm_on_behalf, gate), approved_by=approved_by)
    started = time.perf_counter()
    try:
        outcome = await run_tool(tool, arguments, ctx)
    except InputRequired:  # the client answers and calls again: nothing to audit yet
        metrics.record_call(name, "input_required", caller.interface)
        raise
    except MissingClientCapability as missing:  # the call stops there: audited as refused
        metrics.record_call(name, "missing_capability", caller.interface)
        refused = ToolResult(is_error=True, text=missing.message)
        await _observe(tools, caller, tool, arguments, refused, time.perf_counter() - started)
        raise
    elapsed = time.perf_counter() - started
    outcome.confirmation = gate.how()
    if isinstance(outcome.reason, NotConfirmed):
        metrics.record_call(name, "not_confirmed", caller.interface)
        await _observe(tools, caller, tool, arguments, outcome, elapsed)
        return outcome
    metrics.record_call(name, "error" if outcome.is_error else "ok", caller.interface, elapsed)
    if not outcome.audited or outcome.confirmation is not None:  # a person's word is always kept
        await _observe(tools, caller, tool, arguments, outcome, elapsed)
    return outcome


async def _confirm_on_behalf(gate: confirmation.Gate, tool: Tool, arguments: Any) -> None:
    """`ToolContext.confirm` for the tools a call runs on its caller's behalf (a device's tool,
    judged once the gateway has found it): the same confirmation as the call's own."""
    verdict = await gate.check(tool, arguments)
    if verdict is not None and not verdict.approved:
        refusal = NotConfirmed(tool.name, verdict.how)
        raise ToolError(refusal.message, reason=refusal)


def call_tool_sync(
    name: str, arguments: Any, caller: Caller, *, tools: ToolRegistry = registry
) -> ToolResult:
    """`call_tool` from sync code (a Django view or command): under a server, on the event loop
    that serves the request; elsewhere, on a loop of its own. The tool cannot report progress
    or ask the client anything (there is no client to hear it)."""
    return run_from_sync(partial(call_tool, name, arguments, ToolContext(caller=caller), tools=tools))


def call_tool_or_raise(
    name: str, arguments: Any, caller: Caller, *, tools: ToolRegistry = registry
) -> ToolResult:
    """`call_tool_sync` for a door that is not MCP (REST, a dashboard form): a failed call
    whose tool gave its typed reason raises it, for the door to map by type; refusals raise
    `ToolRefused` as they do for every door."""
    result = call_tool_sync(name, arguments, caller, tools=tools)
    if result.is_error and result.reason is not None:
        raise result.reason
    return result


async def run_tool(tool: Tool, arguments: Any, ctx: ToolContext) -> ToolResult:
    """Run one tool call; failures the model can act on become `isError` results, and so does
    a crash (logged, its details kept from the caller)."""
    try:
        return await tool.call(arguments, ctx)
    except ToolError as exc:
        return ToolResult(
            structured=exc.structured,
            is_error=True,
            text=_error_text(exc),
            audited=exc.audited,
            reason=exc.reason,
        )
    except (asyncio.CancelledError, InputRequired, MissingClientCapability):
        raise
    except Exception:
        logger.exception("tool %s failed", tool.name)
        return ToolResult(is_error=True, text=f"Internal error running tool '{tool.name}'")


def _error_text(exc: ToolError) -> str:
    if exc.structured is not None:
        return json.dumps(exc.structured, ensure_ascii=False)
    return exc.message


async def _refuse(
    tools: ToolRegistry, caller: Caller, tool: Tool, arguments: Any, refusal: ToolRefused
) -> None:
    await _observe(tools, caller, tool, arguments, ToolResult(is_error=True, text=refusal.message), 0.0)
    raise refusal


async def _observe(
    tools: ToolRegistry, caller: Caller, tool: Tool, arguments: Any, outcome: ToolResult, seconds: float
) -> None:
    """Hand an audited caller's call to the registry's observers (before it is answered)."""
    if caller.audited:
        for observer in tools.observers:
            await observer(caller, tool, arguments, outcome, seconds)
