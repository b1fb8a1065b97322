"""`manage.py mcp_stdio` as Claude Desktop starts it (a process of its own), driven from a test's
event loop: requests by id, notifications kept aside."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


class StdioClient:
    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.notifications: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._answers: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._ids = 0

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
            message = json.loads(line)
            if "id" in message and message["id"] in self._answers:
                self._answers.pop(message["id"]).set_result(message)
            else:
                await self.notifications.put(message)

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self._ids += 1
        future = self._answers[self._ids] = asyncio.get_running_loop().create_future()
        line = json.dumps({"jsonrpc": "2.0", "id": self._ids, "method": method, "params": params or {}})
        self.proc.stdin.write(line.encode() + b"\n")
        await self.proc.stdin.drain()
        return await asyncio.wait_for(future, 30)

    async def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return (await self.request("tools/call", {"name": name, "arguments": arguments}))["result"]

    async def tool_names(self) -> set[str]:
        return {t["name"] for t in (await self.request("tools/list"))["result"]["tools"]}
