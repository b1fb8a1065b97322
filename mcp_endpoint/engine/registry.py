"""The tool registry: where apps declare MCP tools, and where sessions find them.

Apps declare tools in `<app>/mcp_tools.py` (imported when apps are ready, as the admin
imports `admin.py`) with the `@tool` decorator. A tool is a plain function taking a
pydantic input model and a `ToolContext`, returning a pydantic output model or a dict;
`inputSchema` and `outputSchema` are generated from the models. Sync functions run in
Django's sync thread (they may use the ORM); async functions run on the event loop.

Dynamic providers (device tools that come and go) plug in with `add_provider`; anything
that changes the tool set calls `notify_changed()` and every listening session hears it,
with what changed it as log records for the clients that asked for logs (a device's tools
discovered, a device gone).

The owner's settings of tools (the admin's tool catalogue, `mcp_endpoint.controls.catalogue`) are
applied here, to every door: a disabled tool is neither listed nor found, a description
override and a confirmation mark show in the effective tool. The registry holds them as a
plain map it is handed (`apply_settings`), never reading the database itself.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, TypedDict, get_type_hints

from asgiref.sync import async_to_sync, sync_to_async
from pydantic import BaseModel, ValidationError
from typing_extensions import Unpack

from mcp_endpoint.auth.scopes import scopes as declared_scopes

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


# MCP's log levels (RFC 5424's severities), least severe first.
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
# What must never reach a client's log: the hub's tokens (`hh_<key id>_<secret>`) and bearer
# credentials, however a tool came to word them.
SECRET_RE = re.compile(r"\bhh_[0-9a-f]+_[A-Za-z0-9_-]+|\b[Bb]earer\s+[A-Za-z0-9._~+/=-]+")
REDACTED = "[redacted]"


def redact(data: Any) -> Any:
    """`data` (a log's JSON) with every secret-looking string part replaced by `[redacted]`."""
    if isinstance(data, str):
        return SECRET_RE.sub(REDACTED, data)
    if isinstance(data, dict):
        return {key: redact(value) for key, value in data.items()}
    if isinstance(data, list | tuple):
        return [redact(value) for value in data]
    return data


def log_wanted(level: str, least: str | None) -> bool:
    """Whether a log at `level` reaches a client that wants `least` and above (None: no logs)."""
    return least is not None and level in LOG_LEVELS and LOG_LEVELS.index(level) >= LOG_LEVELS.index(least)


@dataclass(frozen=True)
class LogRecord:
    """A `notifications/message` not tied to a request (`logger`: what logs)."""

    level: str
    data: Any
    logger: str


# Told that the tool set changed, with why, as logs for the clients that want them.
ToolsListener = Callable[[Sequence[LogRecord]], None]
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

    async def close_stream(self) -> None:
        """Streamable HTTP: end the response stream of this call now; the call goes on and
        the client picks up what follows with a GET resumed from `Last-Event-ID`
        (SEP-1699 polling). Elsewhere it does nothing."""
        await self.send_close()


class ToolError(Exception):
    """A failure the model can act on: becomes a result with `isError: true`.

    `structured`, when given, is sent as the error's JSON (for tools whose documented
    error output is an object, like seed 000's `{"ok": false, "error": ...}`). `reason`, when
    given, is the app's own typed failure, which a door that is not MCP (REST, a dashboard
    form) maps by its type (the device gateway's outcomes to HTTP statuses, say).
    """

    def __init__(
        self,
        message: str,
        structured: dict[str, Any] | None = None,
        *,
        audited: bool = False,
        reason: Exception | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.structured = structured
        self.audited = audited  # as `ToolResult.audited`
        self.reason = reason


class ClientRequestError(ToolError):
    """A request to the client (sampling, elicitation) could not be completed."""


class MissingClientCapability(Exception):
    """A tool needs a request the client did not declare it accepts: not the tool's failure but
    the request's, answered -32021 (MissingRequiredClientCapability) with the capability."""

    def __init__(self, capability: str, method: str) -> None:
        self.capability, self.method = capability, method
        self.message = f"The client did not declare the '{capability}' capability, which '{method}' needs"
        super().__init__(self.message)


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


def _type_name(value: Any) -> str:
    return {
        bool: "boolean",
        int: "integer",
        float: "number",
        str: "string",
        list: "array",
        dict: "object",
    }.get(type(value), "null" if value is None else type(value).__name__)


def describe_validation_error(exc: ValidationError) -> str:
    """Turn pydantic's errors into one sentence a model can act on. Seed 000 gives the text for
    missing arguments ("Faltan parámetros requeridos: name, on"), so argument errors are the
    engine's one family of Spanish texts, all in that seed's wording; the engine's own
    messages are in English."""
    missing: list[str] = []
    unknown: list[str] = []
    invalid: list[str] = []
    for err in exc.errors():
        where = ".".join(str(part) for part in err["loc"]) or "arguments"
        if err["type"] == "missing":
            missing.append(where)
        elif err["type"] == "extra_forbidden":
            unknown.append(where)
        else:
            got = _type_name(err.get("input"))
            invalid.append(f"'{where}' ({err['msg']}; se recibió {got})")
    parts = []
    if missing:
        parts.append("Faltan parámetros requeridos: " + ", ".join(missing))
    if unknown:
        parts.append("Parámetros desconocidos: " + ", ".join(unknown))
    if invalid:
        parts.append("Parámetros inválidos: " + ", ".join(invalid))
    return ". ".join(parts)


class ArgumentError(ToolError):
    """The arguments do not match the tool's input schema."""


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
    # Arguments mirrored in `Mcp-Param-<name>` HTTP headers (SEP-2243), by header name: the path
    # of the argument in `arguments`. Read from the input schema's `x-mcp-header` annotations.
    header_params: dict[str, tuple[str, ...]] = field(init=False, default_factory=dict)

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
        if self.meta:
            data["_meta"] = self.meta
        return data

    def parse_arguments(self, arguments: Any) -> BaseModel:
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise ArgumentError(
                f"Los argumentos deben ser un objeto JSON, se recibió {_type_name(arguments)}"
            )
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


class ToolProvider(Protocol):
    """A source of tools that change at run time (for example, connected devices)."""

    def tools(self) -> Iterable[Tool]: ...

    def tool(self, name: str) -> Tool | None:
        """One tool by name, without walking them all (a thousand devices offer thousands)."""
        ...


CallObserver = Callable[[Caller, Tool, Any, ToolResult, float], Awaitable[None]]


# The engine's closing paragraph of the server's `instructions`, after the apps' own.
ENGINE_INSTRUCTIONS = "Tool results are JSON; errors explain what to fix."


@dataclass(frozen=True)
class ToolSettings:
    """The owner's settings of one tool (its row in the admin's tool catalogue)."""

    enabled: bool = True
    description: str = ""  # blank: the tool's own
    needs_confirmation: bool = False
    client_confirms: bool = False


class _Settings:
    """The settings map with the effective tools built from it (name -> (tool, effective tool
    or None when disabled)), replaced together in one assignment: a reader on another thread
    never pairs a map with another map's tools."""

    __slots__ = ("by_name", "effective")

    def __init__(self, by_name: Mapping[str, ToolSettings]) -> None:
        self.by_name = dict(by_name)
        self.effective: dict[str, tuple[Tool, Tool | None]] = {}

    def apply(self, tool: Tool) -> Tool | None:
        """`tool` as the owner set it: itself, a copy with the settings, or None (disabled)."""
        settings = self.by_name.get(tool.name)
        if settings is None:
            return tool
        built = self.effective.get(tool.name)
        if built is not None and built[0] is tool:  # a device's tool is rebuilt on reconnection
            return built[1]
        effective: Tool | None = None
        if settings.enabled:
            effective = replace(
                tool,
                description=settings.description or tool.description,
                needs_confirmation=settings.needs_confirmation or tool.needs_confirmation,
                client_confirms=settings.client_confirms,
            )
        self.effective[tool.name] = (tool, effective)
        return effective


class ToolRegistry:
    def __init__(self) -> None:
        self._static: dict[str, Tool] = {}
        self._settings = _Settings({})
        self._starters: list[Callable[[], Awaitable[None]]] = []
        self._providers: list[ToolProvider] = []
        self._listeners: set[ToolsListener] = set()
        self._instructions: list[str] = []
        self.observers: list[CallObserver] = []

    def add_instructions(self, text: str) -> None:
        """A paragraph for the server's `instructions` (what an app's tools are for, and how
        to use them together), from the app's `mcp_tools.py`."""
        self._instructions.append(text)

    def instructions(self) -> str:
        """What `initialize` and `server/discover` tell the client: the apps' paragraphs, in
        the order the apps are installed, then the engine's."""
        return "\n\n".join([*self._instructions, ENGINE_INSTRUCTIONS])

    def add_observer(self, observer: CallObserver) -> None:
        """`observer(caller, tool, arguments, result, seconds)` runs after every call of an
        audited caller (refused ones included), before it is answered."""
        self.observers.append(observer)

    def register(self, tool: Tool) -> Tool:
        if tool.name in self._static:
            raise ValueError(f"tool {tool.name!r} is already registered")
        self._static[tool.name] = tool
        return tool

    def add_provider(self, provider: ToolProvider) -> None:
        self._providers.append(provider)

    def remove_provider(self, provider: ToolProvider) -> None:
        self._providers.remove(provider)

    def add_starter(self, start: Callable[[], Awaitable[None]]) -> None:
        """Something `start` starts besides the providers (the catalogue's settings listener)."""
        self._starters.append(start)

    def apply_settings(self, settings: Mapping[str, ToolSettings]) -> None:
        """The owner's settings of tools, by tool name (only tools with settings of their own
        need an entry); they replace the previous ones at once, on any thread. Announcing
        the change to sessions (`notify_changed`) is the caller's decision."""
        self._settings = _Settings(settings)

    def settings(self) -> Mapping[str, ToolSettings]:
        """The settings applied now, by tool name."""
        return self._settings.by_name

    async def start(self) -> None:
        """Start the providers that keep a live view (the device gateway) and the starters:
        every serving process calls it once its event loop runs, before it serves; again is
        harmless."""
        for starter in self._starters:
            await starter()
        for provider in self._providers:
            start = getattr(provider, "start", None)
            if start is not None:
                await start()

    def all_tools(self) -> list[Tool]:
        """Every tool offered now as declared, whatever the owner's settings (the catalogue's
        own view), in a stable order (declared ones first, then dynamic ones by name)."""
        dynamic = sorted(
            (t for provider in self._providers for t in provider.tools() if t.name not in self._static),
            key=lambda t: t.name,
        )
        return [*self._static.values(), *dynamic]

    def list_tools(self, scopes: Iterable[str] | None = None) -> list[Tool]:
        """Every enabled tool as the owner set it, in `all_tools`' order."""
        tools = self.all_tools()
        settings = self._settings
        by_name = settings.by_name
        if by_name:  # a dict lookup per tool; only a tool with settings is looked at further
            tools = [e for t in tools if (e := t if t.name not in by_name else settings.apply(t)) is not None]
        if scopes is not None:
            allowed = set(scopes)
            tools = [t for t in tools if t.scope in allowed]
        return tools

    def list_for(self, caller: Caller) -> list[Tool]:
        """The tools `caller` sees: those of its scopes, narrowed to its own tool set if it has one."""
        return [t for t in self.list_tools(caller.scopes) if caller.sees(t.name)]

    def get(self, name: str) -> Tool | None:
        """The tool called `name` as the owner set it; None if there is none or it is disabled."""
        found = self._static.get(name) or self._provided(name)
        settings = self._settings
        if found is None or not settings.by_name:
            return found
        return settings.apply(found)

    def get_declared(self, name: str) -> Tool | None:
        """The tool called `name` as declared, enabled or not."""
        return self._static.get(name) or self._provided(name)

    def _provided(self, name: str) -> Tool | None:
        for provider in self._providers:
            candidate = provider.tool(name)
            if candidate is not None:
                return candidate
        return None

    def enabled(self, name: str) -> bool:
        """Whether the owner left the tool `name` enabled (a device tool reached by its
        device's own name, through `call_agent_tool`, asks by its exposed name)."""
        settings = self._settings.by_name.get(name)
        return settings is None or settings.enabled

    def subscribe(self, listener: ToolsListener) -> None:
        self._listeners.add(listener)

    def unsubscribe(self, listener: ToolsListener) -> None:
        self._listeners.discard(listener)

    def notify_changed(self, logs: Sequence[LogRecord] = ()) -> None:
        """Tell every listening session that the tool set changed; `logs`: what changed it,
        for the clients that asked for logs at their level."""
        for listener in list(self._listeners):
            listener(logs)


registry = ToolRegistry()


def tool(*, scope: str, **options: Unpack[ToolOptions]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declare a tool in the hub's registry (see `Tool.from_function`)."""

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        registry.register(Tool.from_function(func, scope=scope, **options))
        return func

    return decorate
