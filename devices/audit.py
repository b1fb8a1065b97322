"""Audit of MCP tool calls made with an access token (HTTP, WebSocket)."""

from __future__ import annotations

import json
from typing import Any

from asgiref.sync import sync_to_async

from devices.services import record_event
from mcp_endpoint.registry import Caller, ToolResult

MAX_ARGUMENTS_CHARS = 2000

arecord_event = sync_to_async(record_event)


def _bounded(arguments: Any) -> Any:
    text = json.dumps(arguments, ensure_ascii=False, default=str)
    return arguments if len(text) <= MAX_ARGUMENTS_CHARS else {"truncated": text[:MAX_ARGUMENTS_CHARS]}


async def audit_tool_call(
    caller: Caller, tool: str, arguments: Any, result: ToolResult, seconds: float
) -> None:
    outcome: dict[str, Any] = {"ok": not result.is_error, "ms": round(seconds * 1000, 1)}
    if result.is_error:
        outcome["error"] = (result.text or "")[:500]
    await arecord_event(
        actor=caller.actor,
        interface=caller.interface,
        action="tool.call",
        target=f"tool:{tool}",
        before=_bounded(arguments),
        after=outcome,
    )
