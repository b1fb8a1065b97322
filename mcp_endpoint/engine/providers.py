"""MCP resources and prompts: read-only views of an app's state, declared by the app.

Apps register providers here (from their `mcp_tools.py`). A resource provider lists
concrete resources and URI templates, reads a URI, and says which URIs a change event
touches, so sessions subscribed to those URIs hear `notifications/resources/updated`.
Change events reach sessions through the channel layer: each provider names the group its
app announces changes on and the message type of those announcements, whose `event` (a
dict) is what `uris_for_event` is given.
"""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from mcp_endpoint.engine.tools import ToolContext

Messages = list[dict[str, Any]]


@dataclass(frozen=True)
class Resource:
    uri: str
    name: str
    description: str
    mime_type: str = "application/json"

    def definition(self) -> dict[str, Any]:
        return {
            "uri": self.uri,
            "name": self.name,
            "description": self.description,
            "mimeType": self.mime_type,
        }


@dataclass(frozen=True)
class ResourceTemplate:
    uri_template: str
    name: str
    description: str
    mime_type: str = "application/json"

    def definition(self) -> dict[str, Any]:
        return {
            "uriTemplate": self.uri_template,
            "name": self.name,
            "description": self.description,
            "mimeType": self.mime_type,
        }


class ResourceNotFound(Exception):
    pass


@dataclass(frozen=True)
class ResourceContents:
    """What `read` returns for a resource that is not JSON text: its MIME type, and text or bytes."""

    mime_type: str
    text: str | None = None
    blob: bytes | None = None
    meta: dict[str, Any] | None = None  # the contents' `_meta`, as an extension defines it

    def as_mcp(self, uri: str) -> dict[str, Any]:
        data: dict[str, Any] = {"uri": uri, "mimeType": self.mime_type}
        if self.blob is not None:
            data["blob"] = base64.b64encode(self.blob).decode("ascii")
        else:
            data["text"] = self.text or ""
        if self.meta:
            data["_meta"] = self.meta
        return data


class ResourceProvider(Protocol):
    scope: str
    change_group: str  # channel-layer group whose messages may touch these resources
    change_type: str  # the type of those messages (`{"type": change_type, "event": {...}}`)

    def list_resources(self) -> list[Resource]: ...

    def templates(self) -> list[ResourceTemplate]: ...

    def handles(self, uri: str) -> bool: ...

    def read(self, uri: str) -> str | ResourceContents:
        """The resource's JSON text (or other contents); ResourceNotFound for an unknown URI.
        May use the ORM."""
        ...

    def uris_for_event(self, event: dict[str, Any]) -> list[str]: ...


@dataclass
class PromptArgument:
    name: str
    description: str
    required: bool = False
    values: tuple[str, ...] = ()  # suggestions offered by `completion/complete`


@dataclass
class Prompt:
    """A prompt: `render` turns its arguments into messages (in a thread: it may use the ORM);
    or, for a prompt that asks the client something first, `render_asking` does (on the event
    loop, with the context a tool gets: `ctx.request_client`, and in a stateless request the
    same rounds as a tool's, see `input_rounds`). Exactly one of them is given."""

    name: str
    description: str
    render: Callable[[dict[str, str]], Messages] | None = None
    scope: str = "read"
    arguments: list[PromptArgument] = field(default_factory=list)
    title: str | None = None
    render_asking: Callable[[dict[str, str], ToolContext], Awaitable[Messages]] | None = None

    def __post_init__(self) -> None:
        if (self.render is None) == (self.render_asking is None):
            raise ValueError(f"prompt {self.name}: give either render or render_asking")

    def definition(self) -> dict[str, Any]:
        data: dict[str, Any] = {"name": self.name, "description": self.description}
        if self.title:
            data["title"] = self.title
        data["arguments"] = [
            {"name": a.name, "description": a.description, "required": a.required} for a in self.arguments
        ]
        return data


class ResourceRegistry:
    def __init__(self) -> None:
        self.providers: list[ResourceProvider] = []
        self.prompts: dict[str, Prompt] = {}

    def add_provider(self, provider: ResourceProvider) -> None:
        self.providers.append(provider)

    def add_prompt(self, prompt: Prompt) -> None:
        self.prompts[prompt.name] = prompt

    @property
    def change_groups(self) -> set[str]:
        return {p.change_group for p in self.providers}

    @property
    def change_types(self) -> set[str]:
        return {p.change_type for p in self.providers}

    def visible(self, scopes: frozenset[str]) -> list[ResourceProvider]:
        return [p for p in self.providers if p.scope in scopes]

    def provider_for(self, uri: str, scopes: frozenset[str]) -> ResourceProvider:
        for provider in self.visible(scopes):
            if provider.handles(uri):
                return provider
        raise ResourceNotFound(uri)

    def uris_for_event(self, event: dict[str, Any]) -> set[str]:
        return {uri for p in self.providers for uri in p.uris_for_event(event)}


resources = ResourceRegistry()
