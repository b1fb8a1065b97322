"""Server-to-client requests (sampling, elicitation) in the engine, in-process: the answer
reaches the waiting tool, and every way it can fail becomes a clear `isError` result."""

import asyncio

from asgiref.sync import async_to_sync
from pydantic import BaseModel

from mcp_endpoint.registry import ToolContext, ToolRegistry, ToolResult
from tests.mcp_helpers import Peer, call, tool_on


class Question(BaseModel):
    question: str


def asking_registry() -> ToolRegistry:
    """One tool that asks the client's model and reports its answer."""
    reg = ToolRegistry()

    @tool_on(reg, scope="read", name="ask_model")
    async def ask_model(args: Question, ctx: ToolContext) -> ToolResult:
        answer = await ctx.request_client(
            "sampling/createMessage",
            {
                "messages": [{"role": "user", "content": {"type": "text", "text": args.question}}],
                "maxTokens": 50,
            },
        )
        return ToolResult(text=f"model says: {answer['content']['text']}")

    @tool_on(reg, scope="read", name="ask_twice")
    async def ask_twice(args: Question, ctx: ToolContext) -> ToolResult:
        texts = []
        for n in (1, 2):
            message = {"role": "user", "content": {"type": "text", "text": f"{args.question} ({n})"}}
            answer = await ctx.request_client(
                "sampling/createMessage", {"messages": [message], "maxTokens": 5}
            )
            texts.append(answer["content"]["text"])
        return ToolResult(text=" / ".join(texts))

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
    return call("ask_model", {"question": "¿luces?"}, id=id)


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
    assert "did not answer" in result["result"]["content"][0]["text"]
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


def test_a_stateless_call_asks_by_returning_input_required_and_finishes_on_the_retry():
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"sampling": {}},
    }

    async def scenario():
        peer = Peer(tools=asking_registry())
        first = await peer.call("ask_model", {"question": "¿puerta?"}, _meta=meta)
        state = first["result"]["requestState"]
        answer = {"role": "assistant", "content": {"type": "text", "text": "cerrada"}, "model": "m"}
        retry = await peer.call(
            "ask_model",
            {"question": "¿puerta?"},
            _meta=meta,
            inputResponses={"1": answer},
            requestState=state,
        )
        forged = await peer.call("ask_model", {"question": "?"}, _meta=meta, requestState=state + "x")
        elsewhere = await peer.call("ask_twice", {"question": "?"}, _meta=meta, requestState=state)
        no_capability = {**meta, "io.modelcontextprotocol/clientCapabilities": {}}
        refused = await peer.call("ask_model", {"question": "?"}, _meta=no_capability)
        return first["result"], retry["result"], forged, elsewhere, refused["result"]

    first, retry, forged, elsewhere, refused = async_to_sync(scenario)()
    assert first["resultType"] == "input_required"
    assert first["inputRequests"]["1"]["method"] == "sampling/createMessage"
    assert first["inputRequests"]["1"]["params"]["messages"][0]["content"]["text"] == "¿puerta?"
    assert retry["resultType"] == "complete" and retry["content"][0]["text"] == "model says: cerrada"
    assert forged["error"]["code"] == -32602 and "requestState" in forged["error"]["message"]
    assert elsewhere["error"]["code"] == -32602  # another tool's state: refused
    assert refused["isError"] is True and "'sampling'" in refused["content"][0]["text"]


def test_each_stateless_round_carries_the_answers_so_far():
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"sampling": {}},
    }

    def said(text: str) -> dict:
        return {"role": "assistant", "content": {"type": "text", "text": text}, "model": "m"}

    async def scenario():
        peer = Peer(tools=asking_registry())
        args = {"question": "¿luz?"}
        first = (await peer.call("ask_twice", args, _meta=meta))["result"]
        second = (
            await peer.call(
                "ask_twice",
                args,
                _meta=meta,
                inputResponses={"1": said("sí")},
                requestState=first["requestState"],
            )
        )["result"]
        # Only this round's answer is sent: the first one travels in requestState.
        done = (
            await peer.call(
                "ask_twice",
                args,
                _meta=meta,
                inputResponses={"2": said("no")},
                requestState=second["requestState"],
            )
        )["result"]
        return first, second, done

    first, second, done = async_to_sync(scenario)()
    assert list(first["inputRequests"]) == ["1"]
    assert list(second["inputRequests"]) == ["2"]
    assert second["inputRequests"]["2"]["params"]["messages"][0]["content"]["text"] == "¿luz? (2)"
    assert done["resultType"] == "complete" and done["content"][0]["text"] == "sí / no"
