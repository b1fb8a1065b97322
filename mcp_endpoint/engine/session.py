"""The MCP engine: one server-side conversation, whatever carries it.

A transport creates a `ServerSession` with the caller's identity and a `send` coroutine,
then feeds it messages: stream transports (stdio, WebSocket) call `receive()` per frame
and get responses through `send`, with slow requests running concurrently so `ping` and
cancellations are never stuck behind a tool; request/response transports (HTTP) call
`handle()` and get the response back. The engine knows nothing of transports, and tools
know nothing of the engine.

Both eras of the protocol are served:
- the handshake era (`initialize`, 2024-11-05 .. 2025-11-25), with per-session state;
- the stateless 2026-07-28 revision, recognised by the protocol version every request
  carries in `params._meta`; such requests need no `initialize`.

This module holds the entry points, dispatch, the lifecycle methods and tools; the rest of
`ServerSession` is in `session_resources` (resources, prompts, completions, subscriptions)
and `session_requests` (requests to the client, and routing answers and cancellations
through `relay`); what they share (versions, `_meta` keys, state, request context) is in
`protocol`.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import logging
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from mcp_endpoint.engine import jsonrpc, tasks_extension
from mcp_endpoint.engine.client_logs import LOG_LEVELS, LogRecord, log_wanted, redact
from mcp_endpoint.engine.input_rounds import InputRequired, InputRounds
from mcp_endpoint.engine.jsonrpc import JsonRpcError
from mcp_endpoint.engine.listen import ListenStreams
from mcp_endpoint.engine.pipeline import InsufficientScope, RateLimited, ToolNotFound, call_tool
from mcp_endpoint.engine.protocol import (
    BATCH_VERSION,
    HANDSHAKE_VERSIONS,
    LIST_TTL_MS,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    META_SERVER_INFO,
    STATELESS_VERSIONS,
    SUPPORTED_VERSIONS,
    CloseStream,
    Outgoing,
    RequestContext,
    Send,
    SendOutgoing,
    SessionState,
    cacheable,
    stateless_meta,
)
from mcp_endpoint.engine.providers import ResourceRegistry, resources
from mcp_endpoint.engine.registry import ToolRegistry, registry
from mcp_endpoint.engine.session_requests import ClientRequests, missing_capability_error, quietly
from mcp_endpoint.engine.session_resources import ResourceMethods
from mcp_endpoint.engine.tool_errors import MissingClientCapability
from mcp_endpoint.engine.tools import Caller, LogSender, ProgressSender, ToolContext, ToolResult, no_close

logger = logging.getLogger(__name__)

SERVER_NAME = "homehub"
SERVER_VERSION = "0.1.0"
TOOLS_PAGE_SIZE = 100


def server_info() -> dict[str, str]:
    return {"name": SERVER_NAME, "title": "HomeHub", "version": SERVER_VERSION}


@dataclass
class CancelWatch:
    requested: bool = False  # the client cancelled the request


# Methods the stateless revision removed (it uses per-request `_meta` instead).
HANDSHAKE_ONLY_METHODS = frozenset(
    {"initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"}
)
# ...and those it added (a handshake-era session has the GET stream and resources/subscribe).
STATELESS_ONLY_METHODS = frozenset({"subscriptions/listen"})

# Requests answered inline, in arrival order: cheap, and ordering matters (a pipelined
# `initialize` must be done before the `tools/list` behind it is looked at).
INLINE_METHODS = frozenset({"initialize", "ping", "server/discover", "tools/list", "logging/setLevel"})


class ServerSession(ClientRequests, ResourceMethods):
    """One conversation with a client: entry points for transports, dispatch, the lifecycle
    and tools here; resources, prompts and subscriptions in `session_resources`; requests
    to the client and the routing of answers and cancellations in `session_requests`."""

    def __init__(
        self,
        caller: Caller,
        send: SendOutgoing,
        *,
        tools: ToolRegistry = registry,
        state: SessionState | None = None,
        resource_registry: ResourceRegistry = resources,
    ) -> None:
        self.caller = caller
        self.send = send
        self.tools = tools
        self.resources = resource_registry
        self.state = state or SessionState()
        self._in_flight: dict[jsonrpc.RequestId, asyncio.Task[None]] = {}
        # Where answers and cancellations for this session's work are routed (see `relay`):
        # the HTTP session id, whose POSTs may reach any process; a private name otherwise.
        self.relay_id: str | None = None
        self._local_id: str | None = None  # made when first needed
        self.can_ask_client = True  # False where the client cannot hear a request (JSON responses)
        self.listens = ListenStreams()  # 2026-07-28 subscriptions/listen streams
        self._sending: set[asyncio.Task[None]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._listening = False
        # Awaited before `resources/subscribe` answers: a stream transport starts hearing
        # changes only once a subscription needs them (see `on_change`).
        self.on_subscribe: Callable[[], Awaitable[None]] | None = None

    # --- entry points for transports ---------------------------------------------------

    async def receive(self, raw: str | bytes | Any, *, parsed: bool = False) -> None:
        """Stream transports: take one frame; every answer goes out through `send`."""
        try:
            message: Any = raw if parsed else jsonrpc.parse(raw)
        except JsonRpcError as exc:
            await self.send(jsonrpc.error_response(None, exc))
            return
        method = message.get("method") if isinstance(message, dict) else None
        if isinstance(method, str) and method not in INLINE_METHODS and "id" in message:
            request_id = message.get("id")
            if jsonrpc.is_valid_id(request_id):
                if request_id in self._in_flight:
                    error = JsonRpcError(
                        jsonrpc.INVALID_REQUEST, f"Request id {request_id!r} is already in use"
                    )
                    await self.send(jsonrpc.error_response(request_id, error))
                    return
                if 0 < settings.MCP_MAX_CONCURRENT_CALLS <= len(self._in_flight):
                    await self.send(jsonrpc.error_response(request_id, too_many_in_flight()))
                    return
                task = asyncio.ensure_future(self._answer_cancellable(message))
                self._in_flight[request_id] = task
                task.add_done_callback(lambda _t: self._in_flight.pop(request_id, None))
                return
        await self._answer(message)

    async def _answer(self, message: Any) -> None:
        response = await self.handle(message)
        if response is not None:
            await self.send(response)

    async def _answer_cancellable(self, message: dict[str, Any]) -> None:
        task = asyncio.current_task()
        assert task is not None
        with self.cancellable(message, task):
            await self._answer(message)

    async def handle(
        self, message: Any, *, notify: Send | None = None, close_stream: CloseStream | None = None
    ) -> Outgoing | None:
        """One parsed message (or batch) in, its response out (None when nothing is owed)."""
        notify = notify or self.send
        if isinstance(message, list):
            return await self._handle_batch(message, notify)
        return await self._handle_one(message, notify, close_stream)

    async def handle_cancellable(
        self, message: Any, *, notify: Send | None = None, close_stream: CloseStream | None = None
    ) -> Outgoing | None:
        """`handle`, in the current task, but a `notifications/cancelled` for the request,
        received by any process serving this session, stops it: the answer is then None
        (none is owed)."""
        task = asyncio.current_task()
        assert task is not None
        await self._listen_across()
        with self.cancellable(message, task) as watch:
            try:
                return await self.handle(message, notify=notify, close_stream=close_stream)
            except asyncio.CancelledError:
                if not watch.requested:
                    raise
                task.uncancel()
                return None

    @contextmanager
    def cancellable(self, message: Any, task: asyncio.Task[Any]) -> Iterator[CancelWatch]:
        """While the block runs, a `notifications/cancelled` for `message` (a request) cancels
        `task`; the watch says whether that happened."""
        watch = CancelWatch()
        if not (isinstance(message, dict) and "method" in message and jsonrpc.is_valid_id(message.get("id"))):
            yield watch
            return

        def cancel(_payload: Any) -> None:
            watch.requested = True
            task.cancel()

        with self._expecting("cancel", message["id"], cancel):
            yield watch

    async def drain(self) -> None:
        """Wait for every request still running (end of input on stdio)."""
        while self._in_flight:
            await asyncio.gather(*list(self._in_flight.values()), return_exceptions=True)

    async def close(self) -> None:
        """The transport is gone: cancel what runs and stop listening for changes."""
        for task in list(self._in_flight.values()):
            task.cancel()
        if self._listening:
            self.tools.unsubscribe(self._on_tools_changed)
            self._listening = False

    # --- dispatch --------------------------------------------------------------------------

    async def _handle_batch(self, batch: list[Any], notify: Send) -> Outgoing | None:
        if self.state.protocol_version != BATCH_VERSION:
            version = self.state.protocol_version or "this session"
            return jsonrpc.error_response(
                None,
                JsonRpcError(
                    jsonrpc.INVALID_REQUEST,
                    f"Invalid Request: JSON-RPC batches are only supported in protocol version "
                    f"{BATCH_VERSION}, not {version}",
                ),
            )
        if not batch:
            return jsonrpc.error_response(
                None, JsonRpcError(jsonrpc.INVALID_REQUEST, "Invalid Request: empty batch")
            )
        limit = settings.MCP_MAX_CONCURRENT_CALLS
        if 0 < limit < len(batch):  # a batch's requests run at once
            error = JsonRpcError(
                jsonrpc.INVALID_REQUEST, f"Invalid Request: a batch may carry at most {limit} messages"
            )
            return jsonrpc.error_response(None, error)
        answers = await asyncio.gather(*(self._handle_one(item, notify) for item in batch))
        responses = [answer for answer in answers if answer is not None]
        return responses or None

    async def _handle_one(
        self, message: Any, notify: Send, close_stream: CloseStream | None = None
    ) -> dict[str, Any] | None:
        try:
            kind = jsonrpc.classify(message)
        except JsonRpcError as exc:
            request_id = message.get("id") if isinstance(message, dict) else None
            return jsonrpc.error_response(request_id if jsonrpc.is_valid_id(request_id) else None, exc)
        if kind == "response":
            if jsonrpc.is_valid_id(message.get("id")):
                await self._deliver("reply", message["id"], message)
            return None
        params = message.get("params") or {}
        if kind == "notification":
            await self._on_notification(message["method"], params if isinstance(params, dict) else {})
            return None
        request_id = message["id"]
        try:
            if not isinstance(params, dict):
                raise JsonRpcError(jsonrpc.INVALID_PARAMS, "Invalid params: 'params' must be an object")
            ctx = self._request_context(request_id, message["method"], params, notify)
            ctx.close_stream = close_stream
            result = await self._dispatch(ctx)
            if ctx.stateless and isinstance(result, dict):
                result.setdefault("resultType", "complete")
                result.setdefault("_meta", {}).setdefault(META_SERVER_INFO, server_info())
            return jsonrpc.result_response(request_id, result)
        except JsonRpcError as exc:
            return jsonrpc.error_response(request_id, exc)
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("internal error handling %s", message.get("method"))
            return jsonrpc.error_response(request_id, JsonRpcError(jsonrpc.INTERNAL_ERROR, "Internal error"))

    def _request_context(
        self, request_id: jsonrpc.RequestId, method: str, params: dict[str, Any], notify: Send
    ) -> RequestContext:
        meta = params.get("_meta")
        meta = meta if isinstance(meta, dict) else {}
        version = meta.get(META_PROTOCOL_VERSION)
        stateless = version is not None
        log_level = self.state.log_level
        if stateless:
            stateless_meta(params)
            if version not in STATELESS_VERSIONS:
                raise JsonRpcError(
                    jsonrpc.UNSUPPORTED_PROTOCOL_VERSION,
                    f"Unsupported protocol version: {version}",
                    {"supported": list(SUPPORTED_VERSIONS), "requested": version},
                )
            level = meta.get(META_LOG_LEVEL)
            log_level = level if level in LOG_LEVELS else None  # no level asked: no logs
        elif method not in ("initialize", "ping", "server/discover") and not self.state.initialized:
            raise JsonRpcError(
                jsonrpc.INVALID_REQUEST,
                f"Invalid Request: session not initialized; send 'initialize' before '{method}'",
            )
        return RequestContext(request_id, method, params, notify, stateless, log_level)

    async def _dispatch(self, ctx: RequestContext) -> dict[str, Any]:
        handler = self._handlers.get(ctx.method)
        if (
            handler is None
            or (ctx.stateless and ctx.method in HANDSHAKE_ONLY_METHODS)
            or (not ctx.stateless and ctx.method in STATELESS_ONLY_METHODS)
        ):
            raise JsonRpcError(jsonrpc.METHOD_NOT_FOUND, f"Method not found: {ctx.method}")
        return await handler(self, ctx)

    async def _on_notification(self, method: str, params: dict[str, Any]) -> None:
        if method == "notifications/initialized":
            self.state.initialized = True
        elif method == "notifications/cancelled":
            # A cancelled request gets no response, as the spec asks.
            if jsonrpc.is_valid_id(params.get("requestId")):
                await self._deliver("cancel", params["requestId"], None)
        else:
            logger.debug("ignoring notification %s", method)

    # --- lifecycle ---------------------------------------------------------------------

    async def _initialize(self, ctx: RequestContext) -> dict[str, Any]:
        requested = ctx.params.get("protocolVersion")
        version = requested if requested in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[0]
        info = ctx.params.get("clientInfo")
        caps = ctx.params.get("capabilities")
        self.state.protocol_version = version
        self.state.client_info = info if isinstance(info, dict) else {}
        self.state.client_capabilities = caps if isinstance(caps, dict) else {}
        # Tolerate clients that send requests before `notifications/initialized`.
        self.state.initialized = True
        self.listen_for_changes()
        return {
            "protocolVersion": version,
            "capabilities": self.capabilities(),
            "serverInfo": server_info(),
            "instructions": self.tools.instructions(),
        }

    async def _discover(self, ctx: RequestContext) -> dict[str, Any]:
        return {
            "supportedVersions": list(SUPPORTED_VERSIONS),
            "capabilities": self.capabilities(),
            "instructions": self.tools.instructions(),
            "ttlMs": LIST_TTL_MS,
            "cacheScope": "private",
        }

    def capabilities(self) -> dict[str, Any]:
        capabilities: dict[str, Any] = {
            "tools": {"listChanged": True},
            "resources": {"subscribe": True, "listChanged": False},
            "prompts": {"listChanged": False},
            "completions": {},
            "logging": {},
        }
        # The tasks extension is the engine's own (any tool may run as a task); the others are
        # declared by the apps that use them.
        capabilities["extensions"] = {**self.tools.extensions(), tasks_extension.TASKS_EXTENSION: {}}
        return capabilities

    async def _ping(self, ctx: RequestContext) -> dict[str, Any]:
        return {}

    async def _set_level(self, ctx: RequestContext) -> dict[str, Any]:
        level = ctx.params.get("level")
        if level not in LOG_LEVELS:
            raise JsonRpcError(
                jsonrpc.INVALID_PARAMS, f"Invalid params: 'level' must be one of {', '.join(LOG_LEVELS)}"
            )
        self.state.log_level = level
        return {}

    def listen_for_changes(self) -> None:
        """Forward tool-set changes to this session's client (until `close()`)."""
        if not self._listening:
            self._loop = asyncio.get_running_loop()
            self.tools.subscribe(self._on_tools_changed)
            self._listening = True

    def _on_tools_changed(self, logs: Sequence[LogRecord]) -> None:
        """Registry listener; may be called from any thread."""
        if self._loop is None or self._loop.is_closed():
            return
        self._loop.call_soon_threadsafe(self._tools_changed, logs)

    def _tools_changed(self, logs: Sequence[LogRecord]) -> None:
        self.listens.tools_changed()
        if not self.state.initialized:
            return
        # A handshake-era session hears it unasked, and the logs its client asked for (the
        # 2026-07-28 era has no session to hear logs outside a request).
        messages = [
            jsonrpc.notification("notifications/message", _log_params(log.level, log.data, log.logger))
            for log in logs
            if log_wanted(log.level, self.state.log_level)
        ]
        messages.append(jsonrpc.notification("notifications/tools/list_changed"))
        task = asyncio.ensure_future(self._send_each_quietly(messages))
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    async def _send_quietly(self, message: dict[str, Any]) -> None:
        await quietly(self.send, message)  # the transport went away: close() will follow

    async def _send_each_quietly(self, messages: list[dict[str, Any]]) -> None:
        for message in messages:
            await self._send_quietly(message)

    # --- tools -------------------------------------------------------------------------

    async def _list_tools(self, ctx: RequestContext) -> dict[str, Any]:
        tools = self.tools.list_for(self.caller)
        start = _decode_cursor(ctx.params.get("cursor"))
        page = tools[start : start + TOOLS_PAGE_SIZE]
        result: dict[str, Any] = {"tools": [t.definition() for t in page]}
        if start + TOOLS_PAGE_SIZE < len(tools):
            result["nextCursor"] = _encode_cursor(start + TOOLS_PAGE_SIZE)
        return cacheable(ctx, result)

    async def _call_tool(self, ctx: RequestContext) -> dict[str, Any]:
        """`tools/call`, through the registry's one pipeline (`pipeline.call_tool`); a tool
        that runs as a task is answered with one when the client declared the extension."""
        name = ctx.params.get("name")
        if not isinstance(name, str) or not name:
            raise JsonRpcError(
                jsonrpc.INVALID_PARAMS, "Invalid params: 'name' (the tool to call) is required"
            )
        tool = self.tools.get(name) if self.caller.sees(name) else None
        hands_off = False
        if tool is not None and tool.task_support != "forbidden" and tool.scope in self.caller.scopes:
            if self._declares_tasks(ctx):
                # A task outlives its request: the same bound as a session's requests, per token.
                if await tasks_extension.active_count(self.caller) >= settings.MCP_MAX_CONCURRENT_CALLS:
                    raise too_many_in_flight("tasks of one token may be unfinished at once")
                if not tool.hands_off:
                    return await self._start_task(ctx, name)
                hands_off = True
            elif tool.task_support == "required":
                raise tasks_extension.missing_tasks_error(f"tool '{name}'")
        if ctx.stateless:
            ctx.input_rounds = InputRounds.from_params(name, ctx.params)
        try:
            if hands_off:
                return await self._call_handing_off(ctx, name)
            return await self._tool_result(name, ctx.params.get("arguments"), self.tool_context(ctx))
        except InputRequired as asked:
            assert ctx.input_rounds is not None
            return ctx.input_rounds.result(asked)

    async def _tool_result(self, name: str, arguments: Any, tool_ctx: ToolContext) -> dict[str, Any]:
        """A call's MCP result; a call that did not run (or asked what the client cannot
        answer) is a JsonRpcError."""
        try:
            outcome = await call_tool(name, arguments, tool_ctx, tools=self.tools)
        except MissingClientCapability as missing:
            raise missing_capability_error(missing) from None
        except ToolNotFound as refused:
            raise JsonRpcError(jsonrpc.INVALID_PARAMS, refused.message) from None
        except InsufficientScope as refused:
            raise JsonRpcError(jsonrpc.FORBIDDEN, refused.message, {"requiredScope": refused.scope}) from None
        except RateLimited as refused:
            return ToolResult(is_error=True, text=refused.message).as_mcp()
        return outcome.as_mcp()

    # --- tasks (SEP-2663, `tasks_extension`) -------------------------------------------

    def _declares_tasks(self, ctx: RequestContext) -> bool:
        return tasks_extension.declares_tasks(
            self.client_capabilities(ctx)
        ) or tasks_extension.request_declares_tasks(ctx.params)

    async def _start_task(self, ctx: RequestContext, name: str) -> dict[str, Any]:
        """Save the task, start its work on this process's loop, and answer with the task.
        The work hears nothing of the request's stream (it outlives it): no progress or logs;
        its questions go through `tasks/get` and `tasks/update`."""
        task = await tasks_extension.create(self.caller, name)
        declared = self.client_capabilities(ctx)
        tool_ctx = ToolContext(
            caller=self.caller,
            send_request=tasks_extension.asker(task.task_id, declared),
            client_capabilities=declared,
            task_id=task.task_id,
        )
        tasks_extension.start(task.task_id, self._tool_result(name, ctx.params.get("arguments"), tool_ctx))
        return {"resultType": "task", **tasks_extension.task_fields(task)}

    async def _call_handing_off(self, ctx: RequestContext, name: str) -> dict[str, Any]:
        """A `hands_off` tool's call: it runs in the request until it finishes (or asks a
        stateless round's questions), or until it calls `continue_as_task`; then the request
        is answered with the task, and the same call goes on as the task's work, its
        questions put on the task, its progress and logs no longer sent."""
        handed: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        route = tasks_extension.Route(self.tool_context(ctx))

        async def hand_off() -> None:
            if not handed.done():
                task = await tasks_extension.create(self.caller, name)
                route.to_task(task.task_id, self.client_capabilities(ctx))
                handed.set_result({"resultType": "task", **tasks_extension.task_fields(task)})

        work = asyncio.ensure_future(
            self._tool_result(name, ctx.params.get("arguments"), route.context(hand_off))
        )
        try:
            await asyncio.wait({work, handed}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            work.cancel()
            raise
        if not handed.done():
            handed.cancel()
            return work.result()
        created = handed.result()
        tasks_extension.start(created["taskId"], work)
        return created

    def _tasks_allowed(self, ctx: RequestContext) -> str:
        if not self._declares_tasks(ctx):
            raise tasks_extension.missing_tasks_error(f"'{ctx.method}'")
        return tasks_extension.task_id_of(ctx.params)

    async def _get_task(self, ctx: RequestContext) -> dict[str, Any]:
        task_id = self._tasks_allowed(ctx)
        return await tasks_extension.show(await tasks_extension.get(self.caller, task_id))

    async def _update_task(self, ctx: RequestContext) -> dict[str, Any]:
        task_id = self._tasks_allowed(ctx)
        await tasks_extension.update(self.caller, task_id, ctx.params.get("inputResponses"))
        return {"resultType": "complete"}

    async def _cancel_task(self, ctx: RequestContext) -> dict[str, Any]:
        task_id = self._tasks_allowed(ctx)
        await tasks_extension.cancel(self.caller, task_id)
        return {"resultType": "complete"}

    def tool_context(self, ctx: RequestContext) -> ToolContext:
        """What a tool (or a prompt that asks) running for request `ctx` may use."""
        return ToolContext(
            caller=self.caller,
            send_progress=self._progress_sender(ctx),
            send_log=self._log_sender(ctx),
            send_request=lambda requests: self.request_client(ctx, requests),
            send_close=ctx.close_stream or no_close,
            client_capabilities=self.client_capabilities(ctx),
            log_level=ctx.log_level,
            stateless=ctx.stateless,
            send_notification=lambda method, params: ctx.notify(jsonrpc.notification(method, params)),
        )

    def _progress_sender(self, ctx: RequestContext) -> ProgressSender:
        token = ctx.progress_token

        async def send_progress(progress: float, total: float | None, message: str | None) -> None:
            if token is None:
                return
            params: dict[str, Any] = {"progressToken": token, "progress": progress}
            if total is not None:
                params["total"] = total
            if message:
                params["message"] = message
            await ctx.notify(jsonrpc.notification("notifications/progress", params))

        return send_progress

    def _log_sender(self, ctx: RequestContext) -> LogSender:
        """Logs on the stream of request `ctx` (the ToolContext filters them by level first)."""

        async def send_log(level: str, data: Any, logger: str | None) -> None:
            await ctx.notify(jsonrpc.notification("notifications/message", _log_params(level, data, logger)))

        return send_log

    _handlers: dict[str, Callable[[ServerSession, RequestContext], Awaitable[dict[str, Any]]]] = {
        "initialize": _initialize,
        "server/discover": _discover,
        "ping": _ping,
        "logging/setLevel": _set_level,
        "tools/list": _list_tools,
        "tools/call": _call_tool,
        "resources/list": ResourceMethods._list_resources,
        "resources/templates/list": ResourceMethods._list_templates,
        "resources/read": ResourceMethods._read_resource,
        "resources/subscribe": ResourceMethods._subscribe,
        "resources/unsubscribe": ResourceMethods._unsubscribe,
        "prompts/list": ResourceMethods._list_prompts,
        "prompts/get": ResourceMethods._get_prompt,
        "completion/complete": ResourceMethods._complete,
        "subscriptions/listen": ResourceMethods._listen,
        "tasks/get": _get_task,
        "tasks/update": _update_task,
        "tasks/cancel": _cancel_task,
    }


def too_many_in_flight(where: str = "may run in one session") -> JsonRpcError:
    """Over MCP_MAX_CONCURRENT_CALLS: the request is refused, the session goes on."""
    limit = settings.MCP_MAX_CONCURRENT_CALLS
    return JsonRpcError(
        jsonrpc.TOO_MANY_REQUESTS,
        f"Too many requests at once: at most {limit} {where}; wait for an answer",
        {"limit": limit},
    )


def _encode_cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(json.dumps({"o": offset}).encode()).decode()


def _decode_cursor(cursor: Any) -> int:
    if cursor is None:
        return 0
    try:
        offset = json.loads(base64.urlsafe_b64decode(str(cursor).encode()))["o"]
        if isinstance(offset, int) and offset >= 0:
            return offset
    except (ValueError, KeyError, TypeError, binascii.Error):
        pass
    raise JsonRpcError(jsonrpc.INVALID_PARAMS, "Invalid params: unknown or malformed cursor")


def _log_params(level: str, data: Any, logger: str | None) -> dict[str, Any]:
    """A `notifications/message`'s params: whatever looks like a token redacted."""
    return {"level": level, "logger": logger or SERVER_NAME, "data": redact(data)}
