"""What the fuzz tests (tests/test_fuzz_*.py) share: hypothesis settings, hostile inputs,
and the checks that an answer is in the protocol's own form.

Examples are few and undeadlined so that every fuzz test together stays well under a
minute per database; each test drives its entry point in-process (no servers to start).
"""

from __future__ import annotations

import json
import os
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from devices.home import selectors

# HOMEHUB_FUZZ_EXAMPLES=500 hunts harder (locally); CI keeps the default.
FUZZ = settings(
    max_examples=int(os.environ.get("HOMEHUB_FUZZ_EXAMPLES", 30)),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# Inputs that once broke a parser somewhere (kept as explicit examples): nesting deeper than
# the JSON decoder recurses, the non-standard constants, an integer past Python's digit
# limit, text PostgreSQL refuses to store (NUL, a lone surrogate), and non-UTF-8 bytes.
DEEP_ARRAY = "[" * 5000 + "]" * 5000
DEEP_OBJECT = '{"a":' * 3000 + "1" + "}" * 3000
NAN = '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":NaN}}'
HUGE_INT = "1" * 5000
NUL_TEXT = '{"jsonrpc":"2.0","id":"\\u0000","method":"ping"}'
SURROGATE_ID = '{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}'
NOT_UTF8 = b'{"jsonrpc":"2.0","id":1,"method":"\xff\xfe"}'
HOSTILE_TEXTS = [DEEP_ARRAY, DEEP_OBJECT, NAN, HUGE_INT, NUL_TEXT, SURROGATE_ID, "", " ", "null", "[]"]

# Text with the characters that break storage and transports: NUL, controls, a lone surrogate.
nasty_text = st.text(
    alphabet=st.one_of(st.characters(codec="utf-8"), st.sampled_from(["\x00", "\ud800", "\n", '"'])),
    max_size=20,
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=10**30, max_value=10**80),
    st.floats(allow_nan=False, allow_infinity=False),
    nasty_text,
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(nasty_text, inner, max_size=4)),
    max_leaves=12,
)
request_ids = st.one_of(
    st.integers(),
    st.integers(min_value=10**20, max_value=10**100),
    st.integers(max_value=-(10**20)),
    nasty_text,
    st.none(),
    st.booleans(),
    st.floats(allow_nan=False),
    st.lists(st.integers(), max_size=2),
)
METHODS = [
    "initialize",
    "ping",
    "server/discover",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/read",
    "resources/subscribe",
    "resources/templates/list",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
    "notifications/initialized",
    "notifications/cancelled",
]
methods = st.one_of(st.sampled_from(METHODS), nasty_text, json_values)
TOOLS = [
    "get_all_states",
    "get_sensor_history",
    "set_light_state",
    "fel_batch",
    "call_agent_tool",
    "list_agents",
    "scene_save",
    "scene_activate",
    "automation_validate",
    "automation_dry_run",
    "automation_save",
    "no_such_tool",
]
params = st.one_of(
    json_values,
    st.fixed_dictionaries(
        {},
        optional={
            "name": st.one_of(st.sampled_from(TOOLS), json_values),
            "arguments": json_values,
            "cursor": json_values,
            "uri": st.one_of(
                st.sampled_from(["home://state", "home://lights/salon", "homehub://automations/schema"]),
                json_values,
            ),
            "level": json_values,
            "requestId": request_ids,
            "ref": json_values,
            "argument": json_values,
            "protocolVersion": st.one_of(st.sampled_from(["2025-03-26", "2026-07-28"]), json_values),
            "_meta": st.one_of(
                json_values,
                st.fixed_dictionaries(
                    {
                        "io.modelcontextprotocol/protocolVersion": st.one_of(
                            st.just("2026-07-28"), json_values
                        )
                    },
                    optional={"io.modelcontextprotocol/clientCapabilities": json_values},
                ),
            ),
        },
    ),
)
jsonrpc_messages = st.fixed_dictionaries(
    {"jsonrpc": st.one_of(st.just("2.0"), json_values)},
    optional={"id": request_ids, "method": methods, "params": params, "result": json_values},
)
# Anything a peer may send as one message: JSON-RPC-shaped or not, batches included.
messages = st.one_of(jsonrpc_messages, st.lists(jsonrpc_messages, max_size=3), json_values)


def wire_text(value: Any) -> str:
    """A message as a peer may put it on the wire (Python's JSON, so NaN-free and escaped)."""
    return json.dumps(value)


def wire_bytes(text: str) -> bytes:
    """Text as bytes on the wire; a lone surrogate becomes bytes that are not UTF-8."""
    return text.encode("utf-8", "surrogatepass")


frames = st.one_of(messages.map(wire_text), st.sampled_from(HOSTILE_TEXTS), nasty_text)


def assert_jsonrpc_answer(answer: Any) -> None:
    """A JSON-RPC response (or a batch of them): strict JSON, with a result or an error object."""
    json.dumps(answer, allow_nan=False)
    for one in answer if isinstance(answer, list) else [answer]:
        assert isinstance(one, dict) and one.get("jsonrpc") == "2.0", one
        if "method" in one:  # a notification from the server (progress, log, list changed)
            assert "id" not in one, one
            continue
        assert "id" in one and ("result" in one) != ("error" in one), one
        if "error" in one:
            assert isinstance(one["error"]["code"], int) and isinstance(one["error"]["message"], str)


def assert_clear(answer: Any) -> None:
    """No internal error: whatever was wrong with the request, the answer says what."""
    for one in answer if isinstance(answer, list) else [answer]:
        assert one.get("error", {}).get("code") != -32603, one
        result = one.get("result")
        if isinstance(result, dict) and result.get("isError"):
            assert "Internal error" not in result["content"][0]["text"], one


def home_snapshot() -> dict[str, Any]:
    """What fuzzing must never change: the lights, the alarm and who is home."""
    return selectors.get_all_states()
