"""What the MCP conformance suite found in the engine and the HTTP transport, one test each:
non-JSON resource contents, `completion/complete`, and DNS rebinding through the Host header."""

import base64
import json

import pytest
from asgiref.sync import async_to_sync
from pydantic import BaseModel, Field

from common.origins import host_allowed, origin_allowed
from mcp_endpoint.engine import jsonrpc
from mcp_endpoint.engine.providers import (
    Prompt,
    PromptArgument,
    Resource,
    ResourceContents,
    ResourceNotFound,
    ResourceRegistry,
)
from mcp_endpoint.engine.session import ServerSession
from mcp_endpoint.engine.tools import Caller, Tool, ToolContext
from mcp_endpoint.transports import mirrored_headers
from mcp_endpoint.transports.http import StreamableHttpApp


class Files:
    scope = "read"
    change_group = "files"
    change_type = "files.change"

    def list_resources(self):
        return [Resource("file://note", "note", "A note", "text/plain")]

    def templates(self):
        return []

    def handles(self, uri):
        return uri.startswith("file://")

    def read(self, uri):
        if uri == "file://note":
            return ResourceContents("text/plain", text="hola")
        if uri == "file://pixel":
            return ResourceContents("image/png", blob=b"\x89PNG")
        if uri == "file://data":
            return json.dumps({"a": 1})
        raise ResourceNotFound(uri)

    def uris_for_event(self, event):
        return []


def _session() -> ServerSession:
    registry = ResourceRegistry()
    registry.add_provider(Files())
    registry.add_prompt(
        Prompt(
            name="greet",
            description="Greets",
            render=lambda args: [],
            arguments=[PromptArgument("language", "Language", values=("español", "english", "esperanto"))],
        )
    )

    async def send(message):
        pass

    return ServerSession(Caller("tester", "mcp-stdio"), send, resource_registry=registry)


def _ask(session: ServerSession, method: str, params: dict) -> dict:
    async def go():
        await session.handle({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}})
        return await session.handle({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})

    return async_to_sync(go)()


def test_resources_read_text_and_binary_contents_with_their_mime_type():
    session = _session()
    note = _ask(session, "resources/read", {"uri": "file://note"})["result"]["contents"]
    pixel = _ask(session, "resources/read", {"uri": "file://pixel"})["result"]["contents"]
    data = _ask(session, "resources/read", {"uri": "file://data"})["result"]["contents"]
    assert note == [{"uri": "file://note", "mimeType": "text/plain", "text": "hola"}]
    assert pixel == [
        {"uri": "file://pixel", "mimeType": "image/png", "blob": base64.b64encode(b"\x89PNG").decode()}
    ]
    assert data == [{"uri": "file://data", "mimeType": "application/json", "text": '{"a": 1}'}]


def test_completion_suggests_a_prompt_arguments_values():
    session = _session()
    ref = {"type": "ref/prompt", "name": "greet"}
    found = _ask(
        session, "completion/complete", {"ref": ref, "argument": {"name": "language", "value": "Es"}}
    )
    assert found["result"] == {
        "completion": {"values": ["español", "esperanto"], "total": 2, "hasMore": False}
    }
    other = _ask(session, "completion/complete", {"ref": ref, "argument": {"name": "tone", "value": ""}})
    assert other["result"]["completion"]["values"] == []
    resource = {"type": "ref/resource", "uri": "file://{name}"}
    templated = _ask(session, "completion/complete", {"ref": resource, "argument": {"name": "name"}})
    assert templated["result"]["completion"]["values"] == []
    unknown = {"ref": {"type": "ref/prompt", "name": "nope"}, "argument": {"name": "x", "value": ""}}
    assert _ask(session, "completion/complete", unknown)["error"]["code"] == jsonrpc.INVALID_PARAMS
    assert _ask(session, "completion/complete", {"ref": ref})["error"]["code"] == jsonrpc.INVALID_PARAMS
    assert "completions" in session.capabilities()


def test_dns_rebinding_host_is_refused(settings):
    settings.ALLOWED_HOSTS = ["127.0.0.1", "localhost", "hub.example"]
    assert host_allowed("127.0.0.1:8000") and host_allowed("hub.example") and host_allowed(None)
    assert not host_allowed("evil.example.com") and not host_allowed("evil.example.com:8000")
    # A rebinding page's Origin matches its own (rebound) Host: that is no longer enough.
    assert not origin_allowed("http://evil.example.com:8000", host="evil.example.com:8000", scheme="http")
    assert origin_allowed("http://127.0.0.1:8000", host="127.0.0.1:8000", scheme="http")
    # Another port or scheme of the hub's own host is another origin.
    assert not origin_allowed("http://127.0.0.1:9999", host="127.0.0.1:8000", scheme="http")
    assert not origin_allowed("https://127.0.0.1:8000", host="127.0.0.1:8000", scheme="http")
    assert not origin_allowed("http://hub.example", host="hub.example", scheme="https")
    assert origin_allowed("https://hub.example", host="hub.example:443", scheme="https")
    assert origin_allowed(
        "https://agent.example", host="hub.example", scheme="https", trusted=["https://agent.example:443"]
    )
    assert not origin_allowed(
        "http://agent.example", host="hub.example", scheme="https", trusted=["https://agent.example"]
    )

    sent = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/mcp",
        "headers": [(b"host", b"evil.example.com"), (b"origin", b"http://evil.example.com")],
    }
    async_to_sync(StreamableHttpApp())(scope, receive, send)
    assert sent[0]["status"] == 403
    assert b"host not allowed" in sent[1]["body"]


def test_an_initialize_notification_is_accepted_without_a_session(make_token):
    """Like any notification, an `initialize` without an id is owed no answer: 202, no session."""
    token = make_token()
    init = {"jsonrpc": "2.0", "method": "initialize", "params": {"protocolVersion": "2025-06-18"}}
    sent = []

    async def receive():
        return {"type": "http.request", "body": json.dumps(init).encode(), "more_body": False}

    async def send(message):
        sent.append(message)

    headers = {"host": "127.0.0.1", "authorization": f"Bearer {token}", "content-type": "application/json"}
    headers["accept"] = "application/json, text/event-stream"
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/mcp",
        "headers": [(k.encode(), v.encode()) for k, v in headers.items()],
    }
    async_to_sync(StreamableHttpApp())(scope, receive, send)
    assert sent[0]["status"] == 202
    assert b"mcp-session-id" not in dict(sent[0]["headers"])
    assert sent[1]["body"] == b""


# --- found by the 0.2 line at 2026-07-28 (server-stateless) ---------------------------------


def _post_app(token: str, body: dict, **headers: str) -> tuple[int, dict[str, str], dict]:
    """POST `body` to a `StreamableHttpApp` in this process: status, headers, JSON body."""
    sent = []

    async def receive():
        return {"type": "http.request", "body": json.dumps(body).encode(), "more_body": False}

    async def send(message):
        sent.append(message)

    raw = {
        "host": "127.0.0.1",
        "authorization": f"Bearer {token}",
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        **{name.replace("_", "-"): value for name, value in headers.items()},
    }
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/mcp",
        "headers": [(k.encode(), v.encode()) for k, v in raw.items()],
    }
    async_to_sync(StreamableHttpApp())(scope, receive, send)
    answer_headers = {k.decode(): v.decode() for k, v in sent[0]["headers"]}
    text = b"".join(m.get("body", b"") for m in sent[1:]).decode()
    if answer_headers["content-type"].startswith("text/event-stream"):  # the last event's data
        return sent[0]["status"], answer_headers, json.loads(text.split("data: ")[-1])
    return sent[0]["status"], answer_headers, json.loads(text)


STATELESS = "2026-07-28"
CAPS = {"io.modelcontextprotocol/clientCapabilities": {}}


def test_a_stateless_request_missing_its_meta_is_invalid_params_not_a_header_mismatch(make_token):
    """The headers say 2026-07-28 but the body lacks `_meta`, or what `_meta` must carry: the
    body is wrong, so -32602 (400) with the request's id, before headers are compared with it."""
    token = make_token()
    headers = {"mcp_protocol_version": STATELESS, "mcp_method": "server/discover"}
    version = {"io.modelcontextprotocol/protocolVersion": STATELESS}
    for rpc_id, params in ((101, {}), (102, {"_meta": CAPS}), (104, {"_meta": version})):
        request = {"jsonrpc": "2.0", "id": rpc_id, "method": "server/discover", "params": params}
        status, _, body = _post_app(token, request, **headers)
        assert (status, body["id"], body["error"]["code"]) == (400, rpc_id, jsonrpc.INVALID_PARAMS)
    # With a whole `_meta`, a header that disagrees with it is still a header mismatch.
    other = {"_meta": {**CAPS, "io.modelcontextprotocol/protocolVersion": "2025-11-25"}}
    request = {"jsonrpc": "2.0", "id": 105, "method": "server/discover", "params": other}
    status, _, body = _post_app(token, request, **headers)
    assert (status, body["id"], body["error"]["code"]) == (400, 105, jsonrpc.HEADER_MISMATCH)


def test_the_unsupported_version_error_carries_the_requests_id(make_token):
    token = make_token()
    meta = {**CAPS, "io.modelcontextprotocol/protocolVersion": "v999.0.0"}
    request = {"jsonrpc": "2.0", "id": 301, "method": "server/discover", "params": {"_meta": meta}}
    status, _, body = _post_app(token, request, mcp_protocol_version="v999.0.0", mcp_method="server/discover")
    assert (status, body["id"], body["error"]["code"]) == (400, 301, jsonrpc.UNSUPPORTED_PROTOCOL_VERSION)
    assert body["error"]["data"]["requested"] == "v999.0.0"
    assert STATELESS in body["error"]["data"]["supported"]


def test_a_stateless_insufficient_scope_answer_carries_its_challenge(make_token):
    """403 for a token without the tool's scope says so in `WWW-Authenticate` in both eras
    (RFC 6750's insufficient_scope, the scope needed, RFC 9728's resource metadata)."""
    reader = make_token(scopes=["read"], name="reader")
    meta = {**CAPS, "io.modelcontextprotocol/protocolVersion": STATELESS}
    params = {"name": "set_light_state", "arguments": {"name": "salon", "on": True}, "_meta": meta}
    request = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}
    status, headers, body = _post_app(
        reader, request, mcp_protocol_version=STATELESS, mcp_method="tools/call", mcp_name="set_light_state"
    )
    assert (status, body["id"], body["error"]["code"]) == (403, 7, jsonrpc.FORBIDDEN)
    assert headers["www-authenticate"] == (
        'Bearer error="insufficient_scope", scope="control", '
        'resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource/mcp"'
    )


# --- found by the 0.2 line at 2026-07-28 (http-custom-header-server-validation) ----------------


class Routed(BaseModel):
    region: str = Field(json_schema_extra={"x-mcp-header": "Region"})
    floor: int | None = Field(default=None, json_schema_extra={"x-mcp-header": "Floor", "type": "integer"})
    note: str = ""


def _routed_tool() -> Tool:
    def routed(args: Routed, ctx: ToolContext) -> dict:
        return {"region": args.region}

    return Tool.from_function(routed, scope="read")


def _headers(**values: str) -> dict[str, str]:
    base = {"mcp-protocol-version": STATELESS, "mcp-method": "tools/call", "mcp-name": "routed"}
    return {**base, **{f"mcp-param-{k}": v for k, v in values.items()}}


def _call_routed(**arguments) -> dict:
    meta = {**CAPS, "io.modelcontextprotocol/protocolVersion": STATELESS}
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "routed", "arguments": arguments, "_meta": meta},
    }


def test_x_mcp_header_arguments_are_read_from_the_schema_and_checked_when_declared():
    assert _routed_tool().header_params == {"Region": ("region",), "Floor": ("floor",)}

    def declare(extra: dict) -> None:
        class Bad(BaseModel):
            where: dict = Field(json_schema_extra=extra)

        def bad(args: Bad, ctx: ToolContext) -> dict:
            return {}

        Tool.from_function(bad, scope="read")

    with pytest.raises(ValueError, match="not an HTTP token"):
        declare({"x-mcp-header": "Bad Name"})
    with pytest.raises(ValueError, match="string, integer or boolean"):
        declare({"x-mcp-header": "Where"})


def test_mcp_param_headers_must_repeat_the_arguments():
    tool = _routed_tool()
    hello = base64.b64encode(b"Hello").decode()
    cases = [
        (_headers(region="north"), {"region": "north"}, None),
        (_headers(region="  north  "), {"region": "north"}, None),  # whitespace is not part of it
        (_headers(region=f"=?base64?{hello}?="), {"region": "Hello"}, None),
        (_headers(region=hello), {"region": hello}, None),  # not wrapped: literal
        (_headers(region=f"=?base64?{hello}"), {"region": f"=?base64?{hello}"}, None),
        (_headers(region="north", floor="2"), {"region": "north", "floor": 2}, None),
        (_headers(region="=?base64?SGVsbG8?="), {"region": "Hello"}, "not valid base64"),  # padding
        (_headers(region="=?base64?SGVs!!!bG8=?="), {"region": "Hello"}, "not valid base64"),
        (_headers(), {"region": "north"}, "Mcp-Param-Region header is missing"),
        (_headers(region="south"), {"region": "north"}, "does not match"),
        (_headers(region="north", floor="3"), {"region": "north", "floor": 2}, "does not match"),
        (_headers(region="north", floor="2"), {"region": "north"}, "is sent but argument 'floor' is not"),
    ]
    for headers, arguments, expected in cases:
        found = mirrored_headers.mismatch(headers, _call_routed(**arguments), tool)
        if expected is None:
            assert found is None, (headers, found)
        else:
            assert found is not None and expected in found, (headers, found)


def test_a_stateless_call_whose_param_header_disagrees_is_refused_over_http(make_token, extra_tools):
    extra_tools.register(_routed_tool())
    token = make_token()
    status, _, body = _post_app(token, _call_routed(region="north"), **_headers(region="north"))
    assert status == 200 and body["result"]["structuredContent"] == {"region": "north"}
    status, _, body = _post_app(token, _call_routed(region="north"), **_headers(region="south"))
    assert (status, body["id"], body["error"]["code"]) == (400, 1, jsonrpc.HEADER_MISMATCH)
    assert "Mcp-Param-Region" in body["error"]["message"]
