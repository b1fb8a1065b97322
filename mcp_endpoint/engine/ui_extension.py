"""MCP Apps (SEP-1865, the extension `io.modelcontextprotocol/ui`): the words an app uses to
offer a view that a host shows inside the conversation. The view is an HTML resource
(`ui://...`, `text/html;profile=mcp-app`) named in a tool's `_meta.ui.resourceUri`; the host
renders it in a sandboxed iframe and relays the view's `tools/call` to this server, where it
runs through the same pipeline, scopes and confirmations as the model's own calls.

The server advertises the extension in `capabilities.extensions` once an app declares it
(`ToolRegistry.declare_extension`); a host that does not show views still gets the tool's
ordinary JSON result."""

from __future__ import annotations

from typing import Any

UI_EXTENSION = "io.modelcontextprotocol/ui"
UI_MIME_TYPE = "text/html;profile=mcp-app"
UI_SCHEME = "ui://"
# The extension's settings as the server advertises them.
UI_SETTINGS: dict[str, Any] = {"mimeTypes": [UI_MIME_TYPE]}


def tool_ui_meta(resource_uri: str) -> dict[str, Any]:
    """A tool's `_meta` naming the view that shows its results (callable by the model and by
    the view: the extension's default visibility)."""
    if not resource_uri.startswith(UI_SCHEME):
        raise ValueError(f"an MCP Apps view's URI starts with {UI_SCHEME}: {resource_uri!r}")
    return {"ui": {"resourceUri": resource_uri}}
