"""The headers a 2026-07-28 HTTP request repeats from its body (SEP-2243), checked against it:
`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` (the tool's or prompt's name, the resource's
URI), and `Mcp-Param-<name>` for each argument a tool's input schema marks with
`x-mcp-header` (`Tool.header_params`), so that proxies may route on them without reading
bodies. A header that says something else than the body is a mismatch, answered 400 with
-32020 (HeaderMismatch).

Values that are not plain ASCII travel as `=?base64?<UTF-8 in base64>?=`; a value so wrapped
must be valid base64 (alphabet and padding), and one not wholly wrapped is taken literally.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from mcp_endpoint.engine.protocol import META_PROTOCOL_VERSION
from mcp_endpoint.engine.tools import Tool

NAME_BEARING = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    # The tasks extension's methods name their task (SEP-2663, "Streamable HTTP: Routing Headers").
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}
BASE64_PREFIX, BASE64_SUFFIX = "=?base64?", "?="
PARAM_PREFIX = "mcp-param-"
_ABSENT = object()


class Undecodable(ValueError):
    """A `=?base64?...?=` value that is not valid base64 of UTF-8 text."""


def decode_value(value: str) -> str:
    """A header's value as the body would say it (surrounding whitespace is not part of it)."""
    value = value.strip(" \t")
    if (
        len(value) >= len(BASE64_PREFIX + BASE64_SUFFIX)
        and value.startswith(BASE64_PREFIX)
        and value.endswith(BASE64_SUFFIX)
    ):
        try:
            return base64.b64decode(value[len(BASE64_PREFIX) : -len(BASE64_SUFFIX)], validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            raise Undecodable(value) from None
    return value


def mismatch(headers: dict[str, str], message: dict[str, Any], tool: Tool | None) -> str | None:
    """What in `headers` (names lower-cased) disagrees with the body `message`, or None.
    `tool`: the tool a `tools/call` names, if there is one, for its `Mcp-Param-*` headers."""
    params = message.get("params")
    if not isinstance(params, dict):
        params = {}
    meta = params.get("_meta")
    body_version = meta.get(META_PROTOCOL_VERSION) if isinstance(meta, dict) else None
    if _value(headers, "mcp-protocol-version") != body_version:
        return f"MCP-Protocol-Version header does not match the body's protocol version {body_version!r}"
    method = message.get("method")
    if _value(headers, "mcp-method") != method:
        return f"Mcp-Method header {headers.get('mcp-method')!r} does not match body method {method!r}"
    field = NAME_BEARING.get(method) if isinstance(method, str) else None
    if field and field in params:
        try:
            header = _decoded(headers, "mcp-name")
        except Undecodable:
            return f"Mcp-Name header {headers['mcp-name']!r} is not valid base64"
        if header != params[field]:
            return f"Mcp-Name header {header!r} does not match body {field} {params[field]!r}"
    if tool is not None and method == "tools/call":
        return _param_mismatch(headers, params.get("arguments"), tool)
    return None


def _param_mismatch(headers: dict[str, str], arguments: Any, tool: Tool) -> str | None:
    for name, path in tool.header_params.items():
        header_name = f"Mcp-Param-{name}"
        value = _argument(arguments, path)
        try:
            header = _decoded(headers, PARAM_PREFIX + name.lower())
        except Undecodable:
            return f"{header_name} header is not valid base64"
        if value is _ABSENT or value is None:
            if header is not None:  # an argument not sent has no header either
                return f"{header_name} header is sent but argument '{'.'.join(path)}' is not"
            continue
        if header is None:
            return f"{header_name} header is missing for argument '{'.'.join(path)}'"
        if not _same(header, value):
            return f"{header_name} header {header!r} does not match argument '{'.'.join(path)}' {value!r}"
    return None


def _argument(arguments: Any, path: tuple[str, ...]) -> Any:
    value = arguments
    for part in path:
        if not isinstance(value, dict) or part not in value:
            return _ABSENT
        value = value[part]
    return value


def _same(header: str, value: Any) -> bool:
    """A header's text against the argument it mirrors: strings as they are, booleans as
    `true`/`false`, numbers by value (`10` and `1e1` agree)."""
    if isinstance(value, str):
        return header == value
    if isinstance(value, bool):
        return header == ("true" if value else "false")
    if isinstance(value, int | float):
        try:
            return float(header) == float(value)
        except ValueError:
            return False
    return header == json.dumps(value)


def _value(headers: dict[str, str], name: str) -> str | None:
    value = headers.get(name)
    return value.strip(" \t") if value is not None else None


def _decoded(headers: dict[str, str], name: str) -> str | None:
    value = headers.get(name)
    return decode_value(value) if value is not None else None
