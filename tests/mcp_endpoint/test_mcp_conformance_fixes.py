"""What the MCP conformance suite found in the engine and the HTTP transport, one test each:
non-JSON resource contents, `completion/complete`, and DNS rebinding through the Host header."""

import base64
import json

from asgiref.sync import async_to_sync

from mcp_endpoint import jsonrpc
from mcp_endpoint.registry import Caller
from mcp_endpoint.resources import (
    Prompt,
    PromptArgument,
    Resource,
    ResourceContents,
    ResourceNotFound,
    ResourceRegistry,
)
from mcp_endpoint.session import ServerSession
from mcp_endpoint.transports.asgi_http import host_allowed, origin_allowed
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
    assert not origin_allowed("http://evil.example.com:8000", "evil.example.com:8000")
    assert origin_allowed("http://127.0.0.1:8000", "127.0.0.1:8000")

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
