"""The audit of MCP tool calls made with an access token (HTTP, WebSocket, REST and dashboard
calls to devices).

A change a tool makes is audited by the service that makes it, in the change's own
transaction (actor: the token's name, interface: the door), so a call that changed something
needs no row of its own; nor does a successful read, which `/metrics` counts
(`homehub_mcp_tool_calls`) and the audit trail keeps only with `AUDIT_READ_CALLS=1`. A call
that failed or was refused becomes a `tool.call` event, written before its answer goes out:
no audit row waits in memory, so a killed process loses none. So does every call a person was
asked to confirm, with what they answered (`confirmation`: approved, denied, not answered).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

from audit.services import record_event
from common.storable import bounded_json, storable_text
from common.write_batches import batched
from mcp_endpoint.engine.tools import Caller, Tool, ToolResult

MAX_ARGUMENTS_CHARS = 2000

_arecord_event = batched(record_event)


def kept(tool: Tool, result: ToolResult) -> bool:
    """Whether a call gets a `tool.call` row: failed or refused, confirmed by a person, or a
    read while AUDIT_READ_CALLS is on."""
    return (
        result.is_error
        or result.confirmation is not None
        or (settings.AUDIT_READ_CALLS and tool.annotations.get("readOnlyHint", False))
    )


async def audit_tool_call(
    caller: Caller, tool: Tool, arguments: Any, result: ToolResult, seconds: float
) -> None:
    if not kept(tool, result):
        return
    outcome: dict[str, Any] = {"ok": not result.is_error, "ms": round(seconds * 1000, 1)}
    if result.is_error:
        outcome["error"] = storable_text((result.text or "")[:500])
    if result.confirmation is not None:
        outcome["confirmation"] = storable_text(result.confirmation)
    await _arecord_event(
        actor=caller.actor,
        interface=caller.interface,
        action="tool.call",
        target=f"tool:{tool.name}",
        before=bounded_json(arguments, MAX_ARGUMENTS_CHARS),
        after=outcome,
    )
