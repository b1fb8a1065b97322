"""Seed 000's simplified line protocol: `ready`, then `call` -> `result` / `error`, `quit`.

Calls go through the engine's one pipeline (`pipeline.call_tool`: scopes, rate limit,
metrics, audit) as MCP's do; only the framing and seed 000's texts differ.
"""

from __future__ import annotations

from typing import Any, BinaryIO

from mcp_endpoint.engine.jsonrpc import dumps, loads
from mcp_endpoint.engine.pipeline import InsufficientScope, ToolNotFound, ToolRefused, call_tool
from mcp_endpoint.engine.registry import ToolRegistry, registry
from mcp_endpoint.engine.tools import Caller, ToolContext
from mcp_endpoint.transports.lines import LineTooLong, LineWriter, read_lines

PROTOCOL_VERSION = "0.1.0"
QUIT = object()


def ready_message(tools: ToolRegistry, caller: Caller) -> dict[str, Any]:
    return {
        "type": "ready",
        "version": PROTOCOL_VERSION,
        "tools": [
            {
                "name": t.name,
                "description": t.description,
                "input_schema": t.input_schema,
                "output_schema": t.output_schema or {"type": "object"},
            }
            for t in tools.list_for(caller)
        ],
    }


def _error(call_id: Any, text: str) -> dict[str, Any]:
    return {"type": "error", "id": call_id, "ok": False, "error": text}


async def handle_line(line: bytes, caller: Caller, tools: ToolRegistry = registry) -> dict[str, Any] | object:
    """One input line -> the message to answer, or QUIT."""
    try:
        message = loads(line)
    except ValueError as exc:
        return _error(None, f"Error al parsear JSON: {exc}")
    if not isinstance(message, dict):
        return _error(None, "Mensaje inválido: se esperaba un objeto JSON")
    call_id = message.get("id")
    kind = message.get("type")
    if kind == "quit":
        return QUIT
    if kind != "call":
        return _error(call_id, f"Tipo de mensaje desconocido: {kind!r} (se esperaba 'call' o 'quit')")
    name = message.get("tool")
    not_found = _error(call_id, f"Tool '{name}' no encontrada")  # out of scope too: not offered
    if not isinstance(name, str):
        return not_found
    try:
        outcome = await call_tool(name, message.get("args"), ToolContext(caller=caller), tools=tools)
    except (ToolNotFound, InsufficientScope):
        return not_found
    except ToolRefused as refused:
        return _error(call_id, refused.message)
    if outcome.is_error:
        text = outcome.structured.get("error") if isinstance(outcome.structured, dict) else None
        return _error(call_id, text or outcome.text or "Error")
    return {"type": "result", "id": call_id, "ok": True, "result": outcome.structured}


async def serve_simple(caller: Caller, stdin: BinaryIO, stdout: BinaryIO, max_bytes: int) -> None:
    writer = LineWriter(stdout)
    writer.write(dumps(ready_message(registry, caller)))
    async for line in read_lines(stdin, max_bytes):
        if isinstance(line, LineTooLong):
            writer.write(dumps(_error(None, f"Mensaje demasiado grande (máximo {line.limit} bytes)")))
            continue
        answer = await handle_line(line, caller)
        if answer is QUIT:
            return
        writer.write(dumps(answer))
