"""The benchmark's HTTP peer: `sdk_home_server`'s six tools as the SDK's Streamable HTTP app.

`MCPServer.streamable_http_app(json_response=True)` (stateful sessions, JSON responses,
the SDK's default DNS-rebinding protection for 127.0.0.1) wrapped so that it runs under
any ASGI server: the SDK starts its session manager from the ASGI lifespan, which daphne
never sends, so the wrapper starts it on the first request (and answers the lifespan
itself under servers that do send it). The same code path under daphne and uvicorn:

    cd bench/peers && ../../.venv/bin/daphne -b 127.0.0.1 -p 8765 sdk_home_http:app
    .venv/bin/python -m uvicorn --app-dir bench/peers --port 8765 sdk_home_http:app
"""

from __future__ import annotations

import asyncio

from mcp.server.mcpserver import MCPServer
from sdk_home_server import server


class LazySessionManager:
    """Run the SDK's session manager of `server` for the life of the process, started on
    first use."""

    def __init__(self, server: MCPServer) -> None:
        self.server = server
        self.app = server.streamable_http_app(json_response=True)
        self._ready: asyncio.Event | None = None
        self._task: asyncio.Task | None = None

    async def _run(self) -> None:
        async with self.server.session_manager.run():
            assert self._ready is not None
            self._ready.set()
            await asyncio.Event().wait()  # until the process ends

    async def _started(self) -> None:
        if self._ready is None:
            self._ready = asyncio.Event()
            self._task = asyncio.create_task(self._run())
        await self._ready.wait()

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await self._started()
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        await self._started()
        await self.app(scope, receive, send)


app = LazySessionManager(server)
