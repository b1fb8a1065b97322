"""Server-to-client requests (sampling, elicitation, roots) in the engine, in-process: the answer
reaches the waiting tool, a request the client did not declare it accepts is -32021, and
every other way it can fail becomes a clear `isError` result; in a stateless request, the
rounds of `input_required` answers (named and numbered questions, several at once, prompts
that ask)."""

import asyncio

import pytest
from asgiref.sync import async_to_sync
from django.core import signing
from prometheus_client import REGISTRY
from pydantic import BaseModel

from mcp_endpoint.engine.input_rounds import SALT
from mcp_endpoint.engine.providers import Prompt, ResourceRegistry
from mcp_endpoint.engine.registry import ToolRegistry
from mcp_endpoint.engine.session import ServerSession
from mcp_endpoint.engine.tools import Caller, ClientRequest, ToolContext, ToolResult
from tests.mcp_helpers import ALL, Peer, call, tool_on


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
    assert result["error"]["code"] == -32021  # MissingRequiredClientCapability
    assert result["error"]["data"] == {"requiredCapabilities": {"sampling": {}}}
    assert "'sampling'" in result["error"]["message"]
    assert not [m for m in peer.sent if m.get("method") == "sampling/createMessage"]


def test_a_missing_capability_is_counted_and_audited_as_a_refusal():
    reg, seen = asking_registry(), []

    async def observe(caller, tool, arguments, result, seconds):
        seen.append((tool.name, result.is_error, result.text))

    reg.add_observer(observe)
    labels = {"tool": "ask_model", "outcome": "missing_capability", "interface": "mcp-ws"}
    before = REGISTRY.get_sample_value("homehub_mcp_tool_calls_total", labels) or 0

    async def scenario():
        async def send(message):
            pass

        caller = Caller("ana", "mcp-ws", ALL, audited=True)
        session = ServerSession(caller, send, tools=reg)
        init = {"protocolVersion": "2025-11-25", "capabilities": {}}
        await session.handle({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init})
        return await session.handle(_call())

    answer = async_to_sync(scenario)()
    assert answer["error"]["code"] == -32021
    assert seen == [
        (
            "ask_model",
            True,
            "The client did not declare the 'sampling' capability, which 'sampling/createMessage' needs",
        )
    ]
    assert REGISTRY.get_sample_value("homehub_mcp_tool_calls_total", labels) == before + 1


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
        return first["result"], retry["result"], forged, elsewhere, refused

    first, retry, forged, elsewhere, refused = async_to_sync(scenario)()
    assert first["resultType"] == "input_required"
    assert first["inputRequests"]["1"]["method"] == "sampling/createMessage"
    assert first["inputRequests"]["1"]["params"]["messages"][0]["content"]["text"] == "¿puerta?"
    assert retry["resultType"] == "complete" and retry["content"][0]["text"] == "model says: cerrada"
    assert forged["error"]["code"] == -32602 and "requestState" in forged["error"]["message"]
    assert elsewhere["error"]["code"] == -32602  # another tool's state: refused
    assert refused["error"]["code"] == -32021
    assert refused["error"]["data"] == {"requiredCapabilities": {"sampling": {}}}


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


ELICIT = ClientRequest(
    "elicitation/create", {"message": "¿Nombre?", "requestedSchema": {"type": "object"}}, "name"
)
SAMPLE = ClientRequest("sampling/createMessage", {"messages": [], "maxTokens": 5}, "greeting")
ROOTS = ClientRequest("roots/list", {}, "roots")


def said(text: str) -> dict:
    return {"role": "assistant", "content": {"type": "text", "text": text}, "model": "m"}


def named_registry() -> ToolRegistry:
    """Tools whose questions have names: three at once, and one asked only of a client that
    can answer it."""
    reg = ToolRegistry()

    @tool_on(reg, scope="read", name="ask_all")
    async def ask_all(args: Question, ctx: ToolContext) -> ToolResult:
        name, greeting, roots = await ctx.request_client_all(ELICIT, SAMPLE, ROOTS)
        texts = [name["content"]["name"], greeting["content"]["text"], str(len(roots["roots"]))]
        return ToolResult(text=" / ".join(texts))

    @tool_on(reg, scope="read", name="ask_if_possible")
    async def ask_if_possible(args: Question, ctx: ToolContext) -> ToolResult:
        if not ctx.client_supports("elicitation"):
            return ToolResult(text="nobody to ask")
        answer = await ctx.request_client(ELICIT.method, ELICIT.params, key="name")
        return ToolResult(text=answer["content"]["name"])

    return reg


STATELESS_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"sampling": {}, "elicitation": {}, "roots": {}},
}


def test_named_questions_asked_together_go_out_in_one_round_and_missing_answers_are_asked_again():
    name = {"action": "accept", "content": {"name": "Ana"}}

    async def scenario():
        peer = Peer(tools=named_registry())
        args = {"question": "?"}
        first = (await peer.call("ask_all", args, _meta=STATELESS_META))["result"]
        # Two of three answered, and one answer to a question nobody asked.
        partial = {"name": name, "greeting": said("hola"), "extra": {"x": 1}}
        second = (
            await peer.call(
                "ask_all",
                args,
                _meta=STATELESS_META,
                inputResponses=partial,
                requestState=first["requestState"],
            )
        )["result"]
        done = (
            await peer.call(
                "ask_all",
                args,
                _meta=STATELESS_META,
                inputResponses={"roots": {"roots": [{"uri": "file:///casa"}]}},
                requestState=second["requestState"],
            )
        )["result"]
        # A client may answer a named question at once, without a requestState.
        direct = (
            await peer.call("ask_if_possible", args, _meta=STATELESS_META, inputResponses={"name": name})
        )["result"]
        return first, second, done, direct

    first, second, done, direct = async_to_sync(scenario)()
    assert first["resultType"] == "input_required"
    assert {k: v["method"] for k, v in first["inputRequests"].items()} == {
        "name": "elicitation/create",
        "greeting": "sampling/createMessage",
        "roots": "roots/list",
    }
    assert list(second["inputRequests"]) == ["roots"]
    assert done["resultType"] == "complete" and done["content"][0]["text"] == "Ana / hola / 1"
    assert direct["resultType"] == "complete" and direct["content"][0]["text"] == "Ana"


def test_the_request_state_keeps_only_answers_to_questions_asked():
    async def scenario():
        peer = Peer(tools=named_registry())
        wrong = {"wrong_key": {"action": "accept", "content": {}}}
        return (
            await peer.call("ask_if_possible", {"question": "?"}, _meta=STATELESS_META, inputResponses=wrong)
        )["result"]

    again = async_to_sync(scenario)()
    assert again["resultType"] == "input_required" and list(again["inputRequests"]) == ["name"]
    assert signing.loads(again["requestState"], salt=SALT)["answers"] == {}


def test_a_tool_asks_only_what_the_client_can_answer():
    async def scenario():
        peer = Peer(tools=named_registry())
        meta = {**STATELESS_META, "io.modelcontextprotocol/clientCapabilities": {"sampling": {}}}
        return (await peer.call("ask_if_possible", {"question": "?"}, _meta=meta))["result"]

    assert async_to_sync(scenario)()["content"][0]["text"] == "nobody to ask"


def test_questions_asked_together_over_a_stream_go_out_at_once_and_one_failing_withdraws_the_rest():
    async def scenario():
        peer = Peer(tools=named_registry())
        caps = {"sampling": {}, "elicitation": {}, "roots": {}}
        init = {"protocolVersion": "2025-11-25", "capabilities": caps}
        await peer.session.receive(
            {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}, parsed=True
        )
        await peer.session.receive(call("ask_all", {"question": "?"}, id=1), parsed=True)
        for method in ("elicitation/create", "sampling/createMessage", "roots/list"):
            await peer.wait_for(_is_request(method))
        asked = {m["method"]: m["id"] for m in peer.sent if "id" in m and "method" in m}
        refusal = {"code": -1, "message": "no"}
        await peer.session.receive(
            {"jsonrpc": "2.0", "id": asked["sampling/createMessage"], "error": refusal}, parsed=True
        )
        result = await peer.wait_for(lambda m: m.get("id") == 1)
        await asyncio.sleep(0.05)
        return peer.sent, asked, result

    sent, asked, result = async_to_sync(scenario)()
    assert (
        result["result"]["isError"] is True and "with an error: no" in result["result"]["content"][0]["text"]
    )
    withdrawn = {m["params"]["requestId"] for m in sent if m.get("method") == "notifications/cancelled"}
    assert withdrawn == {asked["elicitation/create"], asked["roots/list"]}


def asking_prompts() -> ResourceRegistry:
    prompts = ResourceRegistry()

    async def render(arguments: dict[str, str], ctx: ToolContext) -> list[dict]:
        answer = await ctx.request_client(ELICIT.method, ELICIT.params, key="context")
        text = f"{arguments['topic']}: {answer['content']['context']}"
        return [{"role": "user", "content": {"type": "text", "text": text}}]

    prompts.add_prompt(Prompt(name="contextual", description="Asks first", render_asking=render))
    return prompts


def test_a_prompt_that_asks_gets_its_answer_by_rounds_or_over_the_stream():
    async def stateless():
        sent = []

        async def send(message):
            sent.append(message)

        session = ServerSession(Caller("t", "mcp-stdio", ALL), send, resource_registry=asking_prompts())
        params = {"name": "contextual", "arguments": {"topic": "luces"}, "_meta": STATELESS_META}
        get = {"jsonrpc": "2.0", "id": 1, "method": "prompts/get", "params": params}
        first = (await session.handle(get))["result"]
        answer = {"context": {"action": "accept", "content": {"context": "salón"}}}
        retry = {**params, "inputResponses": answer, "requestState": first["requestState"]}
        done = (await session.handle({**get, "params": retry}))["result"]
        # Another prompt's or a tool's state is refused.
        forged = await session.handle({**get, "params": {**retry, "name": "contextual", "requestState": "x"}})
        no_caps = {**params, "_meta": {**STATELESS_META, "io.modelcontextprotocol/clientCapabilities": {}}}
        refused = await session.handle({**get, "params": no_caps})
        return first, done, forged, refused

    first, done, forged, refused = async_to_sync(stateless)()
    assert first["resultType"] == "input_required" and first["inputRequests"]["context"]["method"] == (
        "elicitation/create"
    )
    assert done["resultType"] == "complete"
    assert done["messages"][0]["content"]["text"] == "luces: salón"
    assert forged["error"]["code"] == -32602
    assert refused["error"]["code"] == -32021

    async def over_a_stream():
        sent = []

        async def send(message):
            sent.append(message)

        session = ServerSession(Caller("t", "mcp-stdio", ALL), send, resource_registry=asking_prompts())
        init = {"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}}}
        await session.receive(
            {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}, parsed=True
        )
        get = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "prompts/get",
            "params": {"name": "contextual", "arguments": {"topic": "t"}},
        }
        await session.receive(get, parsed=True)
        while not any(m.get("method") == "elicitation/create" for m in sent):
            await asyncio.sleep(0.01)
        asked = next(m for m in sent if m.get("method") == "elicitation/create")
        reply = {"action": "accept", "content": {"context": "cocina"}}
        await session.receive({"jsonrpc": "2.0", "id": asked["id"], "result": reply}, parsed=True)
        while not any(m.get("id") == 1 for m in sent):
            await asyncio.sleep(0.01)
        return next(m for m in sent if m.get("id") == 1)

    got = async_to_sync(over_a_stream)()
    assert got["result"]["messages"][0]["content"]["text"] == "t: cocina"


def test_a_prompt_gives_exactly_one_renderer():
    with pytest.raises(ValueError, match="either render or render_asking"):
        Prompt(name="none", description="neither")
