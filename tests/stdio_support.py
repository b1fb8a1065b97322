"""`manage.py mcp_stdio` as Claude Desktop starts it (a process of its own), driven from a test's
event loop."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from tests.devices_support import McpPeer

ROOT = Path(__file__).resolve().parent.parent


class StdioClient(McpPeer):
    timeout = 30.0

    def __init__(self, env: dict[str, str]) -> None:
        super().__init__()
        self.env = env

    async def __aenter__(self) -> StdioClient:
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "manage.py",
            "mcp_stdio",
            cwd=ROOT,
            env=self.env,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            limit=2**22,
        )
        self._reader = asyncio.ensure_future(self._read())
        await self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}})
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            await asyncio.wait_for(self.proc.wait(), 20)
        except TimeoutError:
            self.proc.kill()
            await self.proc.wait()
        self._reader.cancel()

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        async for line in self.proc.stdout:
            await self._heard(line)

    async def _write(self, text: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(text.encode() + b"\n")
        await self.proc.stdin.drain()
