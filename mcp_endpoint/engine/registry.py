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

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from typing_extensions import Unpack

from mcp_endpoint.engine.client_logs import LogRecord
from mcp_endpoint.engine.tools import Caller, Tool, ToolOptions, ToolResult

# Told that the tool set changed, with why, as logs for the clients that want them.
ToolsListener = Callable[[Sequence[LogRecord]], None]


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
        self._extensions: dict[str, dict[str, Any]] = {}
        self.observers: list[CallObserver] = []

    def add_instructions(self, text: str) -> None:
        """A paragraph for the server's `instructions` (what an app's tools are for, and how
        to use them together), from the app's `mcp_tools.py`."""
        self._instructions.append(text)

    def instructions(self) -> str:
        """What `initialize` and `server/discover` tell the client: the apps' paragraphs, in
        the order the apps are installed, then the engine's."""
        return "\n\n".join([*self._instructions, ENGINE_INSTRUCTIONS])

    def declare_extension(self, identifier: str, settings: dict[str, Any]) -> None:
        """A protocol extension the hub's tools or resources use (SEP-2133: e.g. MCP Apps'
        `io.modelcontextprotocol/ui`), advertised with its settings in the server's
        `capabilities.extensions`; declared by the app that uses it."""
        self._extensions[identifier] = settings

    def extensions(self) -> dict[str, dict[str, Any]]:
        """The extensions declared, by identifier (what `capabilities.extensions` says)."""
        return dict(self._extensions)

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
