"""Helpers for the ESP32 tests: hub processes with chosen settings, devices, an LLM session."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import Iterator
from typing import Any

import httpx
from websockets.asyncio.client import connect

from audit.models import Event
from devices.agents.services import register_agent
from devices.xiaozhi.simulator import SimulatedDevice
from tests.hub_support import running_hub


@contextlib.contextmanager
def hub(env: dict[str, str], *, serve: bool = False, **settings: str) -> Iterator[str]:
    """A hub process on a free loopback port with extra environment `settings` and no rate
    limit; yields its base URL (`HubProcess` for more)."""
    with running_hub({**env, "MCP_RATE_LIMIT": "0"}, serve=serve, **settings) as process:
        yield process.base


def device_url(base: str) -> str:
    return base.replace("http://", "ws://") + "/ws/devices/"


def new_device(base: str, agent_id: str, **options: Any) -> SimulatedDevice:
    """Register `agent_id` (committed, so the hub sees it) and return its simulator."""
    _, token = register_agent(agent_id, transport="ws", actor="test", interface=Event.Interface.SYSTEM)
    return SimulatedDevice(device_url(base), agent_id, token, **options)


def dashboard_call(base: str, agent_id: str, tool: str, **fields: str) -> httpx.Response:
    """Log in to the dashboard as `boss` (`pw-for-tests-only`) and submit a device's tool form
    (arguments as `arg-<name>` fields), as the Devices page does; JSON asked for."""
    with httpx.Client(base_url=base, timeout=15) as browser:
        page = browser.get("/login/")
        csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
        browser.post(
            "/login/", data={"csrfmiddlewaretoken": csrf, "username": "boss", "password": "pw-for-tests-only"}
        )
        devices = browser.get("/devices/")
        assert tool in devices.text
        csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', devices.text).group(1)
        return browser.post(
            "/devices/",
            data={"csrfmiddlewaretoken": csrf, "agent_id": agent_id, "tool": tool, **fields},
            headers={"accept": "application/json"},
        )


class McpPeer:
    """The client end of an MCP session over any frame transport (`_write`, and `_heard` for
    each frame read): requests by id, notifications kept aside."""

    timeout = 10.0

    def __init__(self) -> None:
        self.notifications: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._answers: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._ids = 0

    async def _write(self, text: str) -> None:
        raise NotImplementedError

    async def _heard(self, frame: str | bytes) -> None:
        message = json.loads(frame)
        if "id" in message and message["id"] in self._answers:
            self._answers.pop(message["id"]).set_result(message)
        else:
            await self.notifications.put(message)

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self._ids += 1
        future = self._answers[self._ids] = asyncio.get_running_loop().create_future()
        await self._write(
            json.dumps({"jsonrpc": "2.0", "id": self._ids, "method": method, "params": params or {}})
        )
        return await asyncio.wait_for(future, self.timeout)

    async def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return (await self.request("tools/call", {"name": name, "arguments": arguments}))["result"]

    async def tool_names(self) -> set[str]:
        return {t["name"] for t in (await self.request("tools/list"))["result"]["tools"]}

    async def next_notification(self, method: str, timeout: float = 5) -> dict[str, Any]:
        async with asyncio.timeout(timeout):
            while True:
                message = await self.notifications.get()
                if message.get("method") == method:
                    return message


class LlmSession(McpPeer):
    """An LLM agent on /ws/mcp/."""

    def __init__(self, base: str, token: str) -> None:
        super().__init__()
        self.url = base.replace("http://", "ws://") + "/ws/mcp/"
        self.token = token

    async def __aenter__(self) -> LlmSession:
        self.ws = await connect(self.url, additional_headers={"Authorization": f"Bearer {self.token}"})
        self._reader = asyncio.ensure_future(self._read())
        await self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}})
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.ws.close()
        self._reader.cancel()

    async def _read(self) -> None:
        async for frame in self.ws:
            await self._heard(frame)

    async def _write(self, text: str) -> None:
        await self.ws.send(text)


async def eventually(check, timeout: float = 5.0) -> Any:
    """Poll an async `check()` until it returns something truthy."""
    async with asyncio.timeout(timeout):
        while not (result := await check()):
            await asyncio.sleep(0.02)
    return result
