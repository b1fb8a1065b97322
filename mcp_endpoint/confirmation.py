"""A person confirms a dangerous tool call before it runs.

Which calls: those of a tool annotated destructive (disarming the alarm, a device tool whose
device says so) or marked as needing confirmation in the owner's catalogue, made by a caller
acting on a token (`Caller.confirms`: an LLM client, a script, an outbound endpoint). A
logged-in person's own click is its own confirmation, and `mcp_stdio` runs as whoever holds
the hub's files, who could change the database directly.

How: a client that declared elicitation asks its user (`elicitation/create` over a session;
in a stateless 2026-07-28 request, an input request answered by the client's retry, which runs
the call again from the start: the question comes before anything changes). Any other client's
call becomes a `PendingConfirmation` on the dashboard, where the owner approves or denies it,
and the call waits for the decision, reading the row every POLL_SECONDS: one way that works
between any two hub processes on either database, for calls that wait on a person anyway.
Both ways are bounded by MCP_CONFIRMATION_SECONDS. What happened is kept on the call's result
(`ToolResult.confirmation`) for its audit event. Each request made, decided or lapsed is
announced to every process's REQUESTS_GROUP once committed, where the dashboard's open pages
hear it and show it at once.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db.models import QuerySet
from django.utils import timezone

from common.feed import announce
from mcp_endpoint.models import PendingConfirmation
from mcp_endpoint.registry import ArgumentError, Caller, ClientRequestError, Tool, ToolContext

POLL_SECONDS = 0.25
MAX_ARGUMENTS_CHARS = 500
ELICITATION_KEY = "confirm"  # the question's key in a stateless call's inputRequests
REQUESTS_GROUP = "confirmations"
REQUESTS_CHANGED = "requests.changed"  # the channel-layer message type (`requests_changed`)

Decision = PendingConfirmation.Decision


@dataclass(frozen=True)
class Verdict:
    approved: bool
    how: str  # "approved by ana on the dashboard", "declined in the client"...


def dangerous(tool: Tool) -> bool:
    """Annotated destructive, or marked as needing confirmation by the owner."""
    return bool(tool.annotations.get("destructiveHint")) or tool.needs_confirmation


def required(tool: Tool, arguments: Any, caller: Caller) -> bool:
    """Whether `caller`'s call of `tool` with `arguments` waits for a person: the tool is
    dangerous, or the tool it stands for (a device's, through `call_agent_tool`) is."""
    if not caller.confirms:
        return False
    if dangerous(tool):
        return True
    target = tool.stands_for(arguments) if tool.stands_for is not None else None
    return target is not None and dangerous(target)


def summary(tool: Tool, arguments: Any, caller: Caller) -> str:
    """What will happen, as the person is asked it."""
    shown = json.dumps(arguments if arguments is not None else {}, ensure_ascii=False)
    if len(shown) > MAX_ARGUMENTS_CHARS:
        shown = shown[:MAX_ARGUMENTS_CHARS] + "…"
    return f"{caller.actor} (through {caller.interface}) asks to run {tool.title or tool.name} with {shown}."


async def ask(tool: Tool, arguments: Any, ctx: ToolContext) -> Verdict | None:
    """Ask a person about this call; None when there is nothing to ask (arguments the tool
    will refuse anyway). Lets a stateless call's InputRequired through."""
    try:
        tool.parse_arguments(arguments)
    except ArgumentError:
        return None
    text = summary(tool, arguments, ctx.caller)
    if ctx.client_supports("elicitation"):
        return await _elicit(text, ctx)
    return await _wait_on_dashboard(tool, arguments, text, ctx)


async def _elicit(text: str, ctx: ToolContext) -> Verdict:
    params = {
        "message": f"Confirm: {text}",
        "requestedSchema": {
            "type": "object",
            "properties": {
                "confirm": {"type": "boolean", "title": "Allow it", "description": "Run this action now"}
            },
            "required": ["confirm"],
        },
    }
    limit = settings.MCP_CONFIRMATION_SECONDS
    try:
        answer = await asyncio.wait_for(
            ctx.request_client("elicitation/create", params, key=ELICITATION_KEY), limit
        )
    except TimeoutError:
        return Verdict(False, f"not answered in the client within {limit:g} s")
    except ClientRequestError as failed:
        return Verdict(False, f"not confirmed in the client ({failed.message})")
    action = answer.get("action")
    content = answer.get("content")
    if action == "accept" and isinstance(content, dict) and content.get("confirm") is True:
        return Verdict(True, "confirmed in the client")
    if action == "cancel":
        return Verdict(False, "cancelled in the client")
    return Verdict(False, "declined in the client")


async def _wait_on_dashboard(tool: Tool, arguments: Any, text: str, ctx: ToolContext) -> Verdict:
    limit = settings.MCP_CONFIRMATION_SECONDS
    pending = await _create(tool, arguments, text, ctx.caller, limit)
    await ctx.log("notice", f"Waiting up to {limit:g} s for the owner's approval on the dashboard")
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit
    try:
        while loop.time() < deadline:
            await asyncio.sleep(min(POLL_SECONDS, max(0.0, deadline - loop.time())))
            decision, by = await _decision(pending)
            if decision == Decision.APPROVED:
                return Verdict(True, f"approved by {by} on the dashboard")
            if decision == Decision.DENIED:
                return Verdict(False, f"denied by {by} on the dashboard")
    finally:  # no answer in time, or the call went away (cancelled): the request lapses
        await _expire(pending)
    decision, by = await _decision(pending)  # decided in the last instant
    if decision == Decision.APPROVED:
        return Verdict(True, f"approved by {by} on the dashboard")
    return Verdict(False, f"not approved on the dashboard within {limit:g} s")


@sync_to_async
def _create(tool: Tool, arguments: Any, text: str, caller: Caller, seconds: float) -> int:
    row = PendingConfirmation.objects.create(
        tool=tool.name,
        summary=text,
        arguments=arguments if isinstance(arguments, dict) else {},
        actor=caller.actor[:150],
        interface=caller.interface[:32],
        expires_at=timezone.now() + timedelta(seconds=seconds),
    )
    _announce()
    return row.pk


@sync_to_async
def _decision(pk: int) -> tuple[str, str]:
    row = PendingConfirmation.objects.filter(pk=pk).values_list("decision", "decided_by").first()
    return row if row is not None else (Decision.EXPIRED, "")


@sync_to_async
def _expire(pk: int) -> None:
    if PendingConfirmation.objects.filter(pk=pk, decision=Decision.PENDING).update(
        decision=Decision.EXPIRED, decided_at=timezone.now()
    ):
        _announce()


def decide(pk: int, *, approve: bool, by: str) -> bool:
    """The owner's decision on a pending request; False when it is no longer pending (decided,
    or lapsed: the call stopped waiting)."""
    decided = (
        _open()
        .filter(pk=pk)
        .update(
            decision=Decision.APPROVED if approve else Decision.DENIED,
            decided_by=by[:150],
            decided_at=timezone.now(),
        )
    )
    if decided:
        _announce()
    return bool(decided)


def _announce() -> None:
    announce(REQUESTS_GROUP, {"type": REQUESTS_CHANGED})


def open_requests() -> list[PendingConfirmation]:
    """The requests waiting for a decision now, oldest first."""
    return list(_open().order_by("created_at"))


def recent_requests(limit: int = 20) -> list[PendingConfirmation]:
    """The latest requests decided or lapsed, newest first."""
    return list(PendingConfirmation.objects.exclude(decision=Decision.PENDING)[:limit])


def waiting_count() -> int:
    return _open().count()


def _open() -> QuerySet[PendingConfirmation]:
    return PendingConfirmation.objects.filter(decision=Decision.PENDING, expires_at__gt=timezone.now())
