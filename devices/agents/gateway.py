"""The gateway: ESP32 agents' tools offered to LLM agents as the hub's own MCP tools.

Every hub process keeps an in-memory view of the online agents' tools (the registry asks
for tools synchronously, on the event loop, where the ORM may not run). The view is
loaded when the process serves its first connection and refreshed, one agent at a time,
whenever any process announces a change on the channel layer; each refresh tells the
local MCP sessions that the tool list changed.

A call goes to the agent's channel-layer group, which only the link holding the device's
connection has joined (in whichever process), and the answer comes back on the caller's
process's channel for answers (`common.replies`); a device connected to the caller's own process is
called directly (its `DeviceLink`). A call ends in a `CallResult` (the device's content and
isError, as it came) or a `CallFailed` of the type that says why (devices/agents/outcomes.py),
worded for a model; each door maps it by type (MCP: `as_tool_result` below).

Whether a call waits for a person is judged here too, once the call is routed (`_judge`): on the
device's tool as the serving process knows it then, not on a view that may lag the device.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, TypeVar

from django.conf import settings
from pydantic import BaseModel, ConfigDict

from common.groups import channel_layer, receive_forever
from common.replies import replies
from common.tasks import StartOnce, Tasks
from devices.agents import agent_channels, selectors
from devices.agents import services as agent_services
from devices.agents.link import local_links
from devices.agents.names import exposed_name
from devices.agents.outcomes import (
    CallFailed,
    CallRefused,
    CallResult,
    DeviceTimeout,
    UnknownTool,
    absent,
    from_wire,
)
from devices.agents.services import arecord_agent_call
from mcp_endpoint.engine.client_logs import LogRecord
from mcp_endpoint.engine.registry import registry
from mcp_endpoint.engine.tool_errors import ToolError
from mcp_endpoint.engine.tools import Caller, Tool, ToolContext, ToolResult

logger = logging.getLogger(__name__)

SCOPE = "devices"
REPLY_GRACE_SECONDS = 2.0  # beyond the device's own timeout, for a process that died mid-call
FULL_REFRESH_SECONDS = 60.0
EMPTY_SCHEMA = {"type": "object", "properties": {}}
T = TypeVar("T", bound=Mapping[str, Any])


class DeviceArguments(BaseModel):
    """Anything goes: the device checks its own arguments against its own schema."""

    model_config = ConfigDict(extra="allow")


class DeviceGateway:
    """A `ToolProvider` for the registry, and the router of calls to devices."""

    def __init__(self) -> None:
        self._agents: dict[str, selectors.OnlineAgent] = {}
        self._tools: dict[str, Tool] = {}  # exposed name -> tool
        self._routes: dict[str, tuple[str, str]] = {}  # exposed name -> (agent id, device tool name)
        self._names: dict[str, list[str]] = {}  # agent id -> its exposed names
        self._started = StartOnce(self._start)
        self._tasks = Tasks("gateway")
        self._changed: set[str] = set()
        self._wake: asyncio.Event | None = None

    # --- the view of online agents ---------------------------------------------------------

    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        """The event loop the gateway serves on (the process's, once started)."""
        return self._started.loop

    def tools(self) -> Iterable[Tool]:
        return self._tools.values()

    def tool(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def route(self, name: str) -> tuple[str, str] | None:
        """Reverse map: the (agent id, device tool name) behind an exposed name."""
        return self._routes.get(name)

    def enabled(self, agent_id: str, tool: str) -> bool:
        """Whether the owner left the device's tool enabled (the tool catalogue, by the name
        the hub offers it under)."""
        name = self.names_of(agent_id).get(tool) or exposed_name(agent_id, tool)
        return registry.enabled(name)

    def enabled_only(self, agent_id: str, tools: list[T]) -> list[T]:
        """Of an agent's `tools` (rows with a "name"), those the owner left enabled: what the
        doors that list a device's tools show."""
        return [t for t in tools if self.enabled(agent_id, t["name"])]

    def names_of(self, agent_id: str) -> dict[str, str]:
        """Device tool name -> exposed name, for an online agent."""
        return {self._routes[name][1]: name for name in self._names.get(agent_id, [])}

    async def start(self) -> None:
        """Load the view and start listening for changes, once per process (and event loop);
        again after a failed start (the database or Redis was down), not for ever after."""
        await self._started()

    async def _start(self) -> None:
        layer = channel_layer()
        # The default prefix: channels-redis reads all of a process's channels from one
        # Redis key only if they share it.
        channel = await layer.new_channel()
        await layer.group_add(agent_channels.AGENT_CHANGES_GROUP, channel)
        self._wake = asyncio.Event()
        await self.refresh()
        self._tasks = Tasks("gateway")  # those of an earlier start went with its loop
        self._tasks.spawn(receive_forever(layer, channel, self._note_change, "gateway"))
        self._tasks.spawn(self._refresh_changed())
        self._tasks.spawn(self._vouch_for_devices())

    async def _note_change(self, message: dict[str, Any]) -> None:
        """Note which agent changed; kept quick so that a burst (a thousand devices
        reconnecting) does not overflow the channel, whose overflow is dropped."""
        assert self._wake is not None
        if message.get("type") == agent_channels.CHANGED:
            self._changed.add(str(message.get("agent_id")))
            self._wake.set()

    async def _refresh_changed(self) -> None:
        """Reload the agents noted as changed, many per query; now and then reload them all,
        in case an announcement was lost."""
        assert self._wake is not None
        while True:
            try:
                await asyncio.wait_for(self._wake.wait(), FULL_REFRESH_SECONDS)
                self._wake.clear()
                changed, self._changed = list(self._changed), set()
                await self.refresh(changed)
            except TimeoutError:
                await self.refresh()
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.exception("gateway: could not refresh the agents' tools")
                await asyncio.sleep(1)

    async def _vouch_for_devices(self) -> None:
        """Every DEVICES_PRESENCE_SECONDS, mark this process's devices as seen, and take offline
        the devices that no process has vouched for in three rounds (their process died)."""
        interval = settings.DEVICES_PRESENCE_SECONDS
        while True:
            await asyncio.sleep(interval)
            try:
                await agent_services.atouch_agents(list(local_links))
                gone = await agent_services.aend_silent_sessions(3 * interval)
                if gone:
                    logger.warning(
                        "gateway: %d devices left online by a process that died: %s", len(gone), gone
                    )
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.exception("gateway: could not check the devices' presence")

    async def refresh(self, agent_ids: list[str] | None = None) -> None:
        """Reload the given agents (all when None) from the database; if anything changed,
        tell this process's MCP sessions that the tool list changed, and their clients that
        asked for logs which devices' tools were discovered or went away."""
        found = await selectors.aagent_device_tools(agent_ids)
        ids = list(self._agents) if agent_ids is None else agent_ids
        changed = sorted(a for a in {*ids, *found} if found.get(a) != self._agents.get(a))
        if not changed:
            return
        logs = [_discovery_log(a, self._agents.get(a), found.get(a)) for a in changed]
        for agent_id in ids:
            self._drop(agent_id)
        for agent_id, agent in found.items():
            self._add(agent_id, agent)
        registry.notify_changed(logs)

    def _drop(self, agent_id: str) -> None:
        self._agents.pop(agent_id, None)
        for name in self._names.pop(agent_id, []):
            self._tools.pop(name, None)
            self._routes.pop(name, None)

    def _add(self, agent_id: str, agent: selectors.OnlineAgent) -> None:
        self._agents[agent_id] = agent
        names = self._names[agent_id] = []
        label = agent["name"] or agent_id
        if agent["clashes_with"]:
            logger.warning(
                "gateway: device %s's tools are not offered: their names are agent %s's (the ids read alike)",
                agent_id,
                agent["clashes_with"],
            )
            return
        for spec in agent["tools"]:
            tool_name = spec["name"]
            name = exposed_name(agent_id, tool_name)
            if name in self._routes and self._routes[name][0] == agent_id:
                name = exposed_name(agent_id, tool_name, hashed=True)  # two of its own tools read alike
            if name in self._routes:  # another device's: never taken over
                logger.warning(
                    "gateway: tool %r of device %s is not offered: its name %s is device %s's",
                    tool_name,
                    agent_id,
                    name,
                    self._routes[name][0],
                )
                continue
            schema = spec["inputSchema"] if spec["inputSchema"] else EMPTY_SCHEMA
            self._tools[name] = Tool(
                name=name,
                title=f"{label}: {tool_name}",
                description=f"{spec['description']} (tool '{tool_name}' of device '{label}')".strip(),
                scope=SCOPE,
                source=f"device {agent_id}" + (f" ({agent['name']})" if agent["name"] else ""),
                input_model=DeviceArguments,
                output_model=None,
                handler=self._handler(agent_id, tool_name),
                input_schema=schema,
                annotations=spec["annotations"],
            )
            self._routes[name] = (agent_id, tool_name)
            names.append(name)

    def _handler(
        self, agent_id: str, tool: str
    ) -> Callable[[DeviceArguments, ToolContext], Awaitable[ToolResult]]:
        async def call_device_tool(args: DeviceArguments, ctx: ToolContext) -> ToolResult:
            return await as_tool_result(self.call(agent_id, tool, args.model_dump(), ctx.caller, ctx))

        return call_device_tool

    # --- calls -------------------------------------------------------------------------------

    async def call(
        self,
        agent_id: str,
        tool: str,
        arguments: dict[str, Any],
        caller: Caller,
        ctx: ToolContext | None = None,
    ) -> CallResult:
        """Run `tool` on the agent's device and audit the call, whatever its outcome. With the
        `ctx` of an MCP call, the client hears how it goes (`notifications/message`, logger
        `homehub.devices`): the call's start and end at debug, a failure or the device's own
        error at warning; never the arguments, which may hold what only the device should see."""
        log = _CallLog(ctx, agent_id, tool)
        started = time.perf_counter()
        await log.note("debug", f"Calling tool '{tool}' of device '{agent_id}'")
        try:
            result = await self._route(agent_id, tool, arguments, log, ctx or ToolContext(caller=caller))
        except CallFailed as failure:
            await self._audit(
                caller, agent_id, tool, arguments, started, {"ok": False, "error": failure.message}
            )
            await log.note("warning", failure.message, failure=failure.kind)
            raise
        ms = await self._audit(caller, agent_id, tool, arguments, started, {"ok": not result.is_error})
        if result.is_error:
            await log.note("warning", f"Device '{agent_id}' answered that '{tool}' failed", ms=ms)
        else:
            await log.note("debug", f"Device '{agent_id}' answered '{tool}' in {ms:g} ms", ms=ms)
        return result

    async def _route(
        self, agent_id: str, tool: str, arguments: dict[str, Any], log: _CallLog, ctx: ToolContext
    ) -> CallResult:
        link = local_links.get(agent_id)
        agent = self._agents.get(agent_id)
        if link is None or agent is None:
            # Not connected here: the view may lag the database by a feed round, so ask it, as
            # list_agents does (online or not), before routing the call or refusing it.
            await log.note("debug", f"Device '{agent_id}' is not connected to this process: looking it up")
            await self.refresh([agent_id])
            agent = self._agents.get(agent_id)
        if agent is None:
            presence = await selectors.aagent_presence(agent_id)
            raise absent(agent_id, presence["state"], presence["last_seen"])
        if agent["clashes_with"]:
            raise CallRefused.name_clash(agent_id, agent["clashes_with"])
        if not any(spec["name"] == tool for spec in agent["tools"]) or not self.enabled(agent_id, tool):
            offered = [spec["name"] for spec in agent["tools"] if self.enabled(agent_id, spec["name"])]
            raise UnknownTool.of(agent_id, tool, offered)
        await self._judge(agent_id, tool, arguments, ctx)
        timeout = agent["call_timeout"]
        if link is not None:
            return await link.serve(tool, arguments, timeout)
        await log.note("debug", f"Device '{agent_id}' is connected to another process: calling it there")
        layer = channel_layer()

        async def call(address: dict[str, str]) -> None:
            await layer.group_send(
                agent_channels.agent_group(agent_id),
                {
                    "type": agent_channels.CALL,
                    "agent_id": agent_id,
                    "tool": tool,
                    "arguments": arguments,
                    "timeout": timeout,
                    **address,
                },
            )

        try:
            reply = await replies.ask(call, timeout + REPLY_GRACE_SECONDS)
        except TimeoutError:
            raise DeviceTimeout.after(agent_id, tool, timeout) from None
        return from_wire(reply)

    async def _judge(self, agent_id: str, tool: str, arguments: dict[str, Any], ctx: ToolContext) -> None:
        """Before the call leaves for its device: a person's confirmation when this call of the
        device's tool is dangerous for its caller (`ToolContext.confirm`), judged here, on the
        tool the call reaches, as this process knows it once routed (refreshed from the
        database when the device is not its own), whichever name or door the call came by.
        Fails closed: a tool that cannot be found now is refused, never run unjudged."""
        name = self.names_of(agent_id).get(tool)
        target = registry.get(name) if name is not None else None
        if target is None:
            raise UnknownTool.of(agent_id, tool, [])
        await ctx.confirm(target, arguments)

    async def _audit(
        self,
        caller: Caller,
        agent_id: str,
        tool: str,
        arguments: dict[str, Any],
        started: float,
        outcome: dict[str, Any],
    ) -> float:
        """Record the call in the audit trail; its duration in milliseconds."""
        outcome["ms"] = round((time.perf_counter() - started) * 1000, 1)
        await arecord_agent_call(
            actor=caller.actor,
            interface=caller.interface,
            agent_id=agent_id,
            tool=tool,
            arguments=arguments,
            outcome=outcome,
        )
        return float(outcome["ms"])


def _discovery_log(
    agent_id: str, before: selectors.OnlineAgent | None, after: selectors.OnlineAgent | None
) -> LogRecord:
    """What a device's tools coming, changing or going tells a client (info, `homehub.devices`)."""
    agent = after or before
    assert agent is not None
    label = agent["name"] or agent_id
    tools = [spec["name"] for spec in agent["tools"]]
    if after is None:
        message = f"Device '{label}' went away: its {len(tools)} tools are no longer offered"
    elif before is None:
        message = f"Device '{label}' is online: {len(tools)} tools discovered"
    else:
        message = f"Device '{label}' changed its tools: {len(tools)} now"
    return LogRecord("info", {"message": message, "agent_id": agent_id, "tools": tools}, _CallLog.LOGGER)


class _CallLog:
    """What a device call tells the MCP client that made it (nothing without a ToolContext)."""

    LOGGER = "homehub.devices"

    def __init__(self, ctx: ToolContext | None, agent_id: str, tool: str) -> None:
        self.ctx, self.agent_id, self.tool = ctx, agent_id, tool

    async def note(self, level: str, message: str, **details: Any) -> None:
        if self.ctx is not None and self.ctx.logs(level):
            data = {"message": message, "agent_id": self.agent_id, "tool": self.tool, **details}
            await self.ctx.log(level, data, logger=self.LOGGER)


gateway = DeviceGateway()


async def as_tool_result(call: Awaitable[CallResult]) -> ToolResult:
    """The MCP door: the device's answer as it came, or any failure as a tool error (`isError`)
    with its message; both already audited by the gateway."""
    try:
        result = await call
    except CallFailed as failure:
        raise ToolError(failure.message, audited=True, reason=failure) from None
    return ToolResult(
        content=result.content, structured=result.structured, is_error=result.is_error, audited=True
    )


def with_gateway(app: Callable[..., Awaitable[None]]) -> Callable[..., Awaitable[None]]:
    """Wrap the ASGI application so that a process's gateway (and the registry's other
    starters: the tool catalogue's settings) is running before it serves anything (daphne
    has no start-up hook)."""

    async def application(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "lifespan":
            await registry.start()
        await app(scope, receive, send)

    return application
