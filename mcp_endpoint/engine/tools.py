"""A tool and its call: who calls (`Caller`), what a tool may know of and do in its call
(`ToolContext`), its result (`ToolResult`), and the tool itself (`Tool`, made from a plain function
with `Tool.from_function` and the options of `ToolOptions`, declared once for it and `@tool`)."""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict, get_type_hints

from asgiref.sync import async_to_sync, sync_to_async
from pydantic import BaseModel, ValidationError
from typing_extensions import Unpack

from mcp_endpoint.auth.scopes import scopes as declared_scopes
from mcp_endpoint.engine.client_logs import log_wanted
from mcp_endpoint.engine.tool_errors import (
    ArgumentError,
    ClientRequestError,
    ToolError,
    describe_validation_error,
    type_name,
)

TOOL_NAME_RE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
# An `x-mcp-header` name: an HTTP field-name token (RFC 9110 section 5.1).
HEADER_TOKEN_RE = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")
HEADER_PARAM_TYPES = ("string", "integer", "boolean")


@dataclass(frozen=True)
class Caller:
    """Who is calling and through which door; carried into every audit event."""

    actor: str
    interface: str
    scopes: frozenset[str] = field(default_factory=lambda: frozenset(declared_scopes.names()))  # all
    audited: bool = False  # record every tool call (network callers with a token)
    # Its dangerous calls wait for a person's confirmation (`mcp_endpoint.controls.confirmation`): true
    # for whoever acts on a token (an LLM client, a script, an outbound endpoint); false for a
    # logged-in person's own click and for `mcp_stdio`, run by whoever holds the hub's files.
    confirms: bool = False
    rate_key: str | None = None  # calls are rate-limited per key (the token) when set
    # The only tools it may see and call, within its scopes (an outbound endpoint's chosen
    # few); None: every tool of its scopes.
    tools: frozenset[str] | None = None

    def sees(self, tool_name: str) -> bool:
        """Whether `tool_name` is among the caller's tools (its scopes are checked apart)."""
        return self.tools is None or tool_name in self.tools


@dataclass(frozen=True)
class ClientRequest:
    """A request a tool sends its client (`sampling/createMessage`, `elicitation/create`,
    `roots/list`). `key` names it in a stateless call's `inputRequests` (numbered "1", "2"...
    in the order asked when None); a tool names all its requests or none."""

    method: str
    params: dict[str, Any]
    key: str | None = None
    # Stateless: answered only in a round after the hub asked it (the signed `requestState`
    # says it did), never by an answer the client sends unasked (a person's confirmation).
    asked_first: bool = False


ProgressSender = Callable[[float, float | None, str | None], Awaitable[None]]
# Sends one `notifications/message` (level, data, logger name or None for the engine's).
LogSender = Callable[[str, Any, str | None], Awaitable[None]]
# Sends requests to the client at once; their results, in the same order.
ClientRequester = Callable[[Sequence[ClientRequest]], Awaitable[list[dict[str, Any]]]]


async def _no_progress(progress: float, total: float | None, message: str | None) -> None:
    return None


async def _no_log(level: str, data: Any, logger: str | None) -> None:
    return None


async def _no_client_requests(requests: Sequence[ClientRequest]) -> list[dict[str, Any]]:
    raise ClientRequestError(f"This connection cannot send '{requests[0].method}' to the client")


async def no_close() -> None:
    """A tool's `send_close` where the transport has no stream to close."""
    return None


async def _no_notification(method: str, params: dict[str, Any]) -> None:
    return None


async def _no_handoff() -> None:
    return None


async def _cannot_confirm(tool: Tool, arguments: Any) -> None:
    raise ToolError(
        f"Not run: a call of '{tool.name}' on a token's behalf can be confirmed only through "
        "the tool-call pipeline"
    )


# Sends one notification to the client (method, params) on the call's stream.
NotificationSender = Callable[[str, dict[str, Any]], Awaitable[None]]
# Judges a call a tool makes on its caller's behalf (`ToolContext.confirm`).
Confirmer = Callable[["Tool", Any], Awaitable[None]]


@dataclass
class ToolContext:
    """What a tool may know of its call: the caller, and ways to report back."""

    caller: Caller
    send_progress: ProgressSender = _no_progress
    send_log: LogSender = _no_log
    send_request: ClientRequester = _no_client_requests
    send_close: Callable[[], Awaitable[None]] = no_close
    # What the client declared it can do (`initialize`, or a stateless request's `_meta`).
    client_capabilities: Mapping[str, Any] = field(default_factory=dict)
    # The least severe log level the client wants (its `logging/setLevel`, or a stateless
    # request's own level); None: it wants no logs.
    log_level: str | None = None
    # A stateless (2026-07-28) request: a question to the client ends the round, and the call
    # runs again from the start with the answer (`input_rounds`).
    stateless: bool = False
    send_notification: NotificationSender = _no_notification
    # Set by the pipeline for each call (`pipeline.call_tool`): what `confirm` asks.
    confirmer: Confirmer = _cannot_confirm
    # Set by the pipeline: the account of the person on the hub who approved this call, when
    # it waited for one (a tool that acts with the approver's rights learns whose they are).
    approved_by: str | None = None
    # Turns the call into a task of the MCP tasks extension (`continue_as_task`).
    send_handoff: Callable[[], Awaitable[None]] = _no_handoff
    # The task of the MCP tasks extension this call runs as, None for an ordinary call: a tool
    # that hands its work to a job outliving this process links the task to that job
    # (`tasks_extension.follow`).
    task_id: str | None = None

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Progress notification, delivered only when the request carried a progress token."""
        await self.send_progress(progress, total, message)

    def report_progress_sync(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """The same, from a sync tool running in a worker thread."""
        async_to_sync(self.send_progress)(progress, total, message)

    def logs(self, level: str) -> bool:
        """Whether a log at `level` reaches the client: a tool need not build one that does not."""
        return log_wanted(level, self.log_level)

    async def log(self, level: str, data: Any, *, logger: str | None = None) -> None:
        """A `notifications/message` to the client (`data`: a text or a JSON object; `logger`:
        what logs, e.g. "homehub.fel"), if it wants `level` (see `logs`). Whatever looks like
        a token is redacted on the way, but a tool should not log arguments or secrets at all:
        the client may show its logs to anyone."""
        if self.logs(level):
            await self.send_log(level, data, logger)

    def log_sync(self, level: str, data: Any, *, logger: str | None = None) -> None:
        """The same, from a sync tool running in a worker thread (nothing is done, not even a
        hop to the event loop, for a level the client does not want)."""
        if self.logs(level):
            async_to_sync(self.send_log)(level, data, logger)

    async def confirm(self, tool: Tool, arguments: Any) -> None:
        """Before a tool runs another tool on its caller's behalf (the device gateway, a
        device's tool, once it has found it): the pipeline's confirmation of that call, as for
        a call of its own. Returns when it may run; raises ToolError when it may not (a person
        denied it, or did not answer)."""
        if self.caller.confirms:
            await self.confirmer(tool, arguments)

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        """A notification to the client about this call (`notifications/elicitation/complete`)."""
        await self.send_notification(method, params)

    def client_supports(self, capability: str) -> bool:
        """Whether the client declared `capability` ("sampling", "elicitation", "roots"): a
        tool that can do without a question asks only the clients that can answer it."""
        return capability in self.client_capabilities

    async def request_client(
        self, method: str, params: dict[str, Any], *, key: str | None = None, asked_first: bool = False
    ) -> dict[str, Any]:
        """Send a request to the client in the middle of the call (`sampling/createMessage`,
        `elicitation/create`, `roots/list`) and return its result.

        Raises MissingClientCapability when the client did not declare the capability the
        method needs (the request is answered -32021), and ClientRequestError when the client
        answered with an error or did not answer within MCP_CLIENT_REQUEST_TIMEOUT_SECONDS
        (left uncaught, it becomes the call's `isError` result)."""
        (answer,) = await self.send_request([ClientRequest(method, params, key, asked_first)])
        return answer

    async def request_client_all(self, *requests: ClientRequest) -> list[dict[str, Any]]:
        """Several requests to the client at once, their results in the same order: over a
        stream they are sent together, and a stateless call asks them all in one round."""
        return await self.send_request(requests)

    async def continue_as_task(self) -> None:
        """The MCP tasks extension, for a tool declared `hands_off`: the call has asked what it
        needed in the request (a stateless call's rounds, or over the stream) and goes on as a
        task: the request is answered with the task, and the rest of the work (its result, and
        any question it still asks) is followed with `tasks/get`. No progress or logs reach the
        client after this. Where the call is not becoming a task (the client did not declare
        the extension, or it is one already) it does nothing."""
        await self.send_handoff()

    async def close_stream(self) -> None:
        """Streamable HTTP: end the response stream of this call now; the call goes on and
        the client picks up what follows with a GET resumed from `Last-Event-ID`
        (SEP-1699 polling). Elsewhere it does nothing."""
        await self.send_close()


@dataclass
class ToolResult:
    """The outcome of a call: the JSON value (as `structuredContent`) or an error."""

    structured: Any = None
    is_error: bool = False
    text: str | None = None  # defaults to the JSON of `structured`
    content: list[dict[str, Any]] | None = None  # full MCP content, for pass-through tools
    # The tool recorded this call itself (the device gateway's `agent.call` events, with the
    # device's outcome), so the registry's call observers leave it out.
    audited: bool = False
    reason: Exception | None = None  # a failed call's typed failure (`ToolError.reason`)
    # How a person confirmed or refused the call, when it needed them ("approved by ana on the
    # dashboard"): kept in the call's audit event.
    confirmation: str | None = None

    def as_mcp(self) -> dict[str, Any]:
        if self.content is not None:
            result: dict[str, Any] = {"content": self.content}
        else:
            text = self.text if self.text is not None else json.dumps(self.structured, ensure_ascii=False)
            result = {"content": [{"type": "text", "text": text}]}
        if isinstance(self.structured, dict):
            result["structuredContent"] = self.structured
        result["isError"] = self.is_error
        return result


class ToolOptions(TypedDict, total=False):
    """What `@tool` (and `Tool.from_function`) take besides the function and its scope."""

    name: str  # default: the function's name
    title: str
    description: str  # default: the docstring
    read_only: bool  # the annotations' hints
    destructive: bool
    idempotent: bool
    open_world: bool
    # The output model of a function that returns a plain dict (a selector's TypedDict).
    output: type[BaseModel]
    # Of a destructive tool, which calls are dangerous (`Tool.dangerous_when`).
    dangerous_when: Callable[[Any], bool]
    # What the person deciding a call is shown besides its arguments (`Tool.request_detail`).
    request_detail: Callable[[Any], list[tuple[str, str]]]
    # The tool's `_meta` in `tools/list`, as an extension defines it (MCP Apps' `ui`, see
    # `mcp_endpoint.engine.ui_extension`).
    meta: dict[str, Any]
    # Whether a call may run as a task of the MCP tasks extension ("optional": for a client
    # that declared it; "required": only so), `mcp_endpoint.engine.tasks_extension`.
    task_support: Literal["forbidden", "optional", "required"]
    # The tool itself says when its call becomes a task (`ToolContext.continue_as_task`), after
    # the questions it asks first; otherwise a task call is a task from its start.
    hands_off: bool


@dataclass
class Tool:
    name: str
    description: str
    scope: str
    input_model: type[BaseModel]
    output_model: type[BaseModel] | None
    handler: Callable[..., Any]
    title: str | None = None
    # Where the tool comes from, for the owner's catalogue: the declaring app's package for
    # `@tool` (e.g. "devices.home"), "device <agent id> (<its name>)" for a device's tool.
    source: str = ""
    annotations: dict[str, bool] = field(default_factory=dict)
    input_schema: dict[str, Any] = field(default_factory=dict)
    output_schema: dict[str, Any] | None = None
    meta: dict[str, Any] | None = None
    needs_confirmation: bool = False  # the owner's mark: every call waits for a person
    # The owner's mark: the client's own answer (its user's, through form elicitation) is
    # confirmation enough for this tool, which otherwise waits for a person on the hub.
    client_confirms: bool = False
    # Which calls of a destructive tool are dangerous, from the parsed arguments (disarming
    # the alarm is, arming it is not); None: all of them.
    dangerous_when: Callable[[Any], bool] | None = None
    # From the parsed arguments, what the person deciding a call on the hub is shown besides
    # them, as (heading, text) sections: what the arguments only name (the definition an
    # automation's enabling would let run). May use the ORM (the request's page is a sync view).
    request_detail: Callable[[Any], list[tuple[str, str]]] | None = None
    # Arguments mirrored in `Mcp-Param-<name>` HTTP headers (SEP-2243), by header name: the path
    # of the argument in `arguments`. Read from the input schema's `x-mcp-header` annotations.
    header_params: dict[str, tuple[str, ...]] = field(init=False, default_factory=dict)
    # A call answered with a task (SEP-2663): "optional" when the client declared the extension,
    # "required" refused (-32021) otherwise, "forbidden" never.
    task_support: Literal["forbidden", "optional", "required"] = "forbidden"
    hands_off: bool = False  # see ToolOptions.hands_off

    def __post_init__(self) -> None:
        if not TOOL_NAME_RE.match(self.name):
            raise ValueError(f"invalid tool name {self.name!r}: 1-64 characters of [A-Za-z0-9_.-]")
        if self.scope not in declared_scopes:
            raise ValueError(
                f"tool {self.name}: undeclared scope {self.scope!r} (see mcp_endpoint.auth.scopes)"
            )
        if not self.input_schema:
            self.input_schema = _clean_schema(self.input_model.model_json_schema())
        self.header_params = _header_params(self.name, self.input_schema)
        if self.hands_off and self.task_support == "forbidden":
            raise ValueError(f"tool {self.name}: hands_off is for a tool that runs as a task")
        if self.dangerous_when is not None and not self.annotations.get("destructiveHint"):
            raise ValueError(f"tool {self.name}: dangerous_when is for a destructive tool")
        if self.output_schema is None and self.output_model is not None:
            self.output_schema = _clean_schema(self.output_model.model_json_schema())
        # A plain function runs in a thread; None for a coroutine function, awaited as it is.
        self._sync_handler = (
            None if inspect.iscoroutinefunction(self.handler) else sync_to_async(self.handler)
        )

    @classmethod
    def from_function(cls, func: Callable[..., Any], *, scope: str, **options: Unpack[ToolOptions]) -> Tool:
        """A tool from a plain function: the input model is the type of its first parameter,
        the output model its return type, or `output` for a function that returns a plain dict
        (a TypedDict its selector gives, sent as it is: no model is built per call); the
        description defaults to the docstring."""
        unknown = set(options) - set(ToolOptions.__annotations__)
        if unknown:  # what the type checker catches, caught where it does not look
            raise TypeError(f"unknown tool options: {', '.join(sorted(unknown))}")
        hints = get_type_hints(func)
        params = list(inspect.signature(func).parameters)
        output_model = options.get("output") or hints.get("return")
        if not (isinstance(output_model, type) and issubclass(output_model, BaseModel)):
            output_model = None
        return cls(
            name=options.get("name") or func.__name__,
            description=options.get("description") or inspect.cleandoc(func.__doc__ or ""),
            scope=scope,
            input_model=hints[params[0]],
            output_model=output_model,
            handler=func,
            title=options.get("title"),
            source=func.__module__.removesuffix(".mcp_tools"),
            annotations={
                "readOnlyHint": options.get("read_only", False),
                "destructiveHint": options.get("destructive", False),
                "idempotentHint": options.get("idempotent", False),
                "openWorldHint": options.get("open_world", False),
            },
            dangerous_when=options.get("dangerous_when"),
            request_detail=options.get("request_detail"),
            meta=options.get("meta"),
            task_support=options.get("task_support", "forbidden"),
            hands_off=options.get("hands_off", False),
        )

    def definition(self) -> dict[str, Any]:
        """The tool as `tools/list` shows it."""
        data: dict[str, Any] = {"name": self.name}
        if self.title:
            data["title"] = self.title
        data["description"] = self.description
        data["inputSchema"] = self.input_schema
        if self.output_schema is not None:
            data["outputSchema"] = self.output_schema
        if self.annotations:
            data["annotations"] = (
                {"title": self.title, **self.annotations} if self.title else self.annotations
            )
        if self.task_support != "forbidden":
            data["execution"] = {"taskSupport": self.task_support}
        if self.meta:
            data["_meta"] = self.meta
        return data

    def parse_arguments(self, arguments: Any) -> BaseModel:
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise ArgumentError(f"Los argumentos deben ser un objeto JSON, se recibió {type_name(arguments)}")
        try:
            return self.input_model.model_validate(arguments)
        except ValidationError as exc:
            raise ArgumentError(describe_validation_error(exc)) from None

    async def call(self, arguments: Any, ctx: ToolContext) -> ToolResult:
        """Validate, run, and shape the result. Raises ToolError for model-actionable failures."""
        params = self.parse_arguments(arguments)
        if self._sync_handler is None:
            value = await self.handler(params, ctx)
        else:
            value = await self._sync_handler(params, ctx)
        if isinstance(value, ToolResult):
            return value
        if isinstance(value, BaseModel):
            value = value.model_dump(mode="json", exclude_none=True)
        return ToolResult(structured=value)


def _header_params(tool: str, schema: dict[str, Any]) -> dict[str, tuple[str, ...]]:
    """The `x-mcp-header` annotations of an input schema (on properties, at any depth of
    `properties`), checked as SEP-2243 constrains them: a declaration a client must reject
    is a ValueError here, when the tool is declared."""
    found: dict[str, tuple[str, ...]] = {}

    def walk(node: dict[str, Any], path: tuple[str, ...]) -> None:
        properties = node.get("properties")
        if not isinstance(properties, dict):
            return
        for name, sub in properties.items():
            if not isinstance(sub, dict):
                continue
            header = sub.get("x-mcp-header")
            if header is not None:
                where = ".".join((*path, name))
                if not isinstance(header, str) or not HEADER_TOKEN_RE.match(header):
                    raise ValueError(
                        f"tool {tool}: x-mcp-header of '{where}' is not an HTTP token: {header!r}"
                    )
                if header.lower() in (known.lower() for known in found):
                    raise ValueError(f"tool {tool}: x-mcp-header {header!r} is declared twice")
                if sub.get("type") not in HEADER_PARAM_TYPES:
                    raise ValueError(
                        f"tool {tool}: x-mcp-header on '{where}' needs a string, integer or boolean"
                    )
                found[header] = (*path, name)
            walk(sub, (*path, name))

    walk(schema, ())
    return found


def _clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop pydantic's decorative `title`s so the schema reads like a hand-written one."""

    def clean(node: dict[str, Any]) -> dict[str, Any]:
        out = {k: v for k, v in node.items() if not (k == "title" and isinstance(v, str))}
        for key in ("properties", "$defs"):  # mappings of name -> schema
            if isinstance(out.get(key), dict):
                out[key] = {name: clean_any(sub) for name, sub in out[key].items()}
        for key in ("items", "additionalProperties", "not"):
            if isinstance(out.get(key), dict):
                out[key] = clean(out[key])
        for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
            if isinstance(out.get(key), list):
                out[key] = [clean_any(sub) for sub in out[key]]
        return out

    def clean_any(node: Any) -> Any:
        return clean(node) if isinstance(node, dict) else node

    cleaned = clean(schema)
    cleaned.setdefault("properties", {})
    return cleaned
