"""How a tool call fails: the errors a tool raises (and the model can act on), and the
arguments' errors, worded from pydantic's."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError


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


def type_name(value: Any) -> str:
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
            got = type_name(err.get("input"))
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
