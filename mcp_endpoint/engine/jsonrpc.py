"""JSON-RPC 2.0 framing: parsing, the standard error codes, and response shapes."""

from __future__ import annotations

import json
from typing import Any, TypeGuard

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
# HomeHub's own, in the implementation-defined server range.
FORBIDDEN = -32001
RATE_LIMITED = -32002
TOO_MANY_REQUESTS = -32003  # more requests running at once than MCP_MAX_CONCURRENT_CALLS
TOO_MANY_SESSIONS = -32004  # a token past MCP_MAX_SESSIONS_PER_TOKEN WebSocket connections
# The stateless 2026-07-28 revision.
HEADER_MISMATCH = -32020
MISSING_REQUIRED_CLIENT_CAPABILITY = -32021
UNSUPPORTED_PROTOCOL_VERSION = -32022

RequestId = str | int


class JsonRpcError(Exception):
    """An error to answer in JSON-RPC's own form."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def as_error(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


def error_response(request_id: Any, error: JsonRpcError) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": error.as_error()}


def result_response(request_id: RequestId, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def notification(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return message


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


# Made once: json.loads with any option builds a new decoder per call (three times slower).
_decoder = json.JSONDecoder(parse_constant=_refuse_constant)


def loads(raw: str | bytes) -> Any:
    """Strict JSON (RFC 8259) from a peer, for every door of the hub.

    Python's decoder accepts NaN and Infinity (which no peer can read back) and raises
    RecursionError on deep nesting, which no caller expects; both become ValueError, as
    does text that is not UTF-8 (UnicodeDecodeError is one).
    """
    try:
        if isinstance(raw, bytes | bytearray):  # as json.loads does
            raw = raw.decode(json.detect_encoding(raw), "surrogatepass")
        return _decoder.decode(raw)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def parse(raw: str | bytes) -> Any:
    """Decode one message; a parse failure is a JsonRpcError with code -32700."""
    try:
        return loads(raw)
    except ValueError as exc:
        raise JsonRpcError(PARSE_ERROR, f"Parse error: {exc}") from None


def dumps(message: Any) -> str:
    """Compact JSON, UTF-8 kept as is; one line (JSON escapes every newline in strings).

    A lone surrogate a peer sent as `\\ud800` (and which we echo, in an id or an error)
    cannot be encoded as UTF-8: such a message is written with ASCII escapes instead.
    """
    text = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
    try:
        text.encode()
    except UnicodeEncodeError:
        return json.dumps(message, separators=(",", ":"))
    return text


def is_valid_id(value: Any) -> TypeGuard[RequestId]:
    return (isinstance(value, (str, int))) and not isinstance(value, bool)


def classify(message: Any) -> str:
    """'request', 'notification' or 'response'; raises -32600 for anything else."""
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        raise JsonRpcError(INVALID_REQUEST, "Invalid Request: expected a JSON-RPC 2.0 object")
    if "method" in message:
        if not isinstance(message["method"], str):
            raise JsonRpcError(INVALID_REQUEST, "Invalid Request: 'method' must be a string")
        if "params" in message and not isinstance(message["params"], dict | list):
            raise JsonRpcError(INVALID_REQUEST, "Invalid Request: 'params' must be an object")
        if "id" not in message:
            return "notification"
        if not is_valid_id(message["id"]):
            raise JsonRpcError(INVALID_REQUEST, "Invalid Request: 'id' must be a string or an integer")
        return "request"
    if "id" in message and ("result" in message or "error" in message):
        return "response"
    raise JsonRpcError(INVALID_REQUEST, "Invalid Request: neither a request, a notification nor a response")
