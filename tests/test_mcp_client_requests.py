"""Server-to-client requests (sampling, elicitation) in the engine, in-process: the answer
reaches the waiting tool, and every way it can fail becomes a clear `isError` result."""

import asyncio

from asgiref.sync import async_to_sync
from pydantic import BaseModel

from mcp_endpoint.registry import ToolContext, ToolRegistry, ToolResult, tool
from tests.mcp_helpers import Peer


class Question(BaseModel):
    question: str


def asking_registry() -> ToolRegistry:
    """One tool that asks the client's model and reports its answer."""
    reg = ToolRegistry()

    @tool(scope="read", name="ask_model", target=reg)
    async def ask_model(args: Question, ctx: ToolContext) -> ToolResult:
        answer = await ctx.request_client(
            "sampling/createMessage",
            {
                "messages": [{"role": "user", "content": {"type": "text", "text": args.question}}],
                "maxTokens": 50,
            },
        )
        return ToolResult(text=f"model says: {answer['content']['text']}")

    return reg


async def _connected(capabilities: dict) -> Peer:
    """A stream session (stdio, WebSocket) whose client declared `capabilities`."""
    peer = Peer(tools=asking_registry())
    init = {"protocolVersion": "2025-11-25", "capabilities": capabilities}
    await peer.session.receive(
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}, parsed=True
    )
    return peer


def _call(id: int = 1) -> dict:
    arguments = {"question": "¿luces?"}
    return {
        "jsonrpc": "2.0",
        "id": id,
        "method": "tools/call",
        "params": {"name": "ask_model", "arguments": arguments},
    }


def _is_request(method: str):
    return lambda m: m.get("method") == method and "id" in m


def test_the_answer_reaches_the_waiting_tool():
    async def scenario():
        peer = await _connected({"sampling": {}})
        await peer.session.receive(_call(), parsed=True)
        asked = await peer.wait_for(_is_request("sampling/createMessage"))
        await peer.session.receive('{"jsonrpc":"2.0","id":99,"method":"ping"}')  # not stuck behind it
        pong = await peer.wait_for(lambda m: m.get("id") == 99)
        answer = {"role": "assistant", "content": {"type": "text", "text": "dos"}, "model": "m"}
        await peer.session.receive({"jsonrpc": "2.0", "id": asked["id"], "result": answer}, parsed=True)
        return asked, pong, await peer.wait_for(lambda m: m.get("id") == 1)

    asked, pong, result = async_to_sync(scenario)()
    assert asked["params"]["messages"][0]["content"]["text"] == "¿luces?"
    assert pong["result"] == {}
    assert result["result"]["content"][0]["text"] == "model says: dos"
    assert result["result"]["isError"] is False


def test_a_client_without_the_capability_is_not_asked():
    async def scenario():
        peer = await _connected({"elicitation": {}})
        await peer.session.receive(_call(), parsed=True)
        return peer, await peer.wait_for(lambda m: m.get("id") == 1)

    peer, result = async_to_sync(scenario)()
    assert result["result"]["isError"] is True
    assert "'sampling'" in result["result"]["content"][0]["text"]
    assert not [m for m in peer.sent if m.get("method") == "sampling/createMessage"]


def test_an_error_answer_fails_the_call_clearly():
    async def scenario():
        peer = await _connected({"sampling": {}})
        await peer.session.receive(_call(), parsed=True)
        asked = await peer.wait_for(_is_request("sampling/createMessage"))
        error = {"code": -1, "message": "User rejected sampling request"}
        await peer.session.receive({"jsonrpc": "2.0", "id": asked["id"], "error": error}, parsed=True)
        return await peer.wait_for(lambda m: m.get("id") == 1)

    result = async_to_sync(scenario)()
    assert result["result"]["isError"] is True
    assert "User rejected sampling request" in result["result"]["content"][0]["text"]


def test_no_answer_times_out_and_the_client_is_told(settings):
    settings.MCP_CLIENT_REQUEST_TIMEOUT_SECONDS = 0.2

    async def scenario():
        peer = await _connected({"sampling": {}})
        await peer.session.receive(_call(), parsed=True)
        asked = await peer.wait_for(_is_request("sampling/createMessage"))
        result = await peer.wait_for(lambda m: m.get("id") == 1)
        late = {"role": "assistant", "content": {"type": "text", "text": "tarde"}, "model": "m"}
        await peer.session.receive({"jsonrpc": "2.0", "id": asked["id"], "result": late}, parsed=True)
        await peer.session.receive('{"jsonrpc":"2.0","id":5,"method":"ping"}')  # the session lives on
        await peer.wait_for(lambda m: m.get("id") == 5)
        return peer.sent, asked, result

    sent, asked, result = async_to_sync(scenario)()
    assert result["result"]["isError"] is True
    assert "no respondió" in result["result"]["content"][0]["text"]
    cancelled = [m for m in sent if m.get("method") == "notifications/cancelled"]
    assert [m["params"]["requestId"] for m in cancelled] == [asked["id"]]
    assert len([m for m in sent if m.get("id") == 1]) == 1  # the late answer changed nothing


def test_cancelling_the_call_withdraws_the_question():
    async def scenario():
        peer = await _connected({"sampling": {}})
        await peer.session.receive(_call(), parsed=True)
        asked = await peer.wait_for(_is_request("sampling/createMessage"))
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
        await peer.session.receive(cancel, parsed=True)
        withdrawn = await peer.wait_for(lambda m: m.get("method") == "notifications/cancelled")
        await peer.session.drain()
        await asyncio.sleep(0.05)
        return peer.sent, asked, withdrawn

    sent, asked, withdrawn = async_to_sync(scenario)()
    assert withdrawn["params"]["requestId"] == asked["id"]
    assert not [m for m in sent if m.get("id") == 1]  # a cancelled request gets no response


def test_stateless_requests_cannot_ask_the_client():
    async def scenario():
        peer = Peer(tools=asking_registry())
        meta = {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"sampling": {}},
        }
        return await peer.call("ask_model", {"question": "?"}, _meta=meta)

    result = async_to_sync(scenario)()["result"]
    assert result["isError"] is True
    assert "sesión" in result["content"][0]["text"]
