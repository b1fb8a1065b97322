"""MCP over stdio: one JSON-RPC message per line; stdout carries nothing else."""

from __future__ import annotations

from typing import BinaryIO

from mcp_endpoint.engine import jsonrpc
from mcp_endpoint.engine.protocol import Outgoing
from mcp_endpoint.engine.session import ServerSession
from mcp_endpoint.engine.tools import Caller
from mcp_endpoint.transports.lines import LineTooLong, LineWriter, read_lines


async def serve_stdio(caller: Caller, stdin: BinaryIO, stdout: BinaryIO, max_bytes: int) -> None:
    writer = LineWriter(stdout)

    async def send(message: Outgoing) -> None:
        writer.write(jsonrpc.dumps(message))

    session = ServerSession(caller, send)
    try:
        async for line in read_lines(stdin, max_bytes):
            if isinstance(line, LineTooLong):
                error = jsonrpc.JsonRpcError(jsonrpc.INVALID_REQUEST, f"Invalid Request: {line}")
                await send(jsonrpc.error_response(None, error))
                continue
            await session.receive(line)
        await session.drain()
    finally:
        await session.close()
