"""Server-to-client requests, cancellation and resumed streams over Streamable HTTP against
live daphne processes (with the conformance fixture tools): the official SDK client, and
two processes over Redis where the answer, the cancellation or the resuming GET reaches
the process that is not running the call."""

import asyncio
import json

import httpx
import pytest
from asgiref.sync import async_to_sync

from tests.devices_support import hub
from tests.hub_support import CONFORMANCE_SETTINGS
from tests.mcp_helpers import sdk_client

pytestmark = pytest.mark.live
ACCEPT = "application/json, text/event-stream"
CAPABILITIES = {"sampling": {}, "elicitation": {}}


@pytest.mark.parametrize("mode", ["legacy", "auto"])  # auto: 2026-07-28, stateless rounds
def test_sdk_client_answers_sampling_and_elicitation(live_env, make_token, mode):
    from mcp import types

    token = make_token()
    asked: list[str] = []

    async def sample(context, params):
        asked.append(params.messages[0].content.text)
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="todo apagado"), model="m"
        )

    async def elicit(context, params):
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"username": "ana", "email": "ana@example.com"})

    async def scenario(base):
        async with sdk_client(
            base, token, mode=mode, sampling_callback=sample, elicitation_callback=elicit
        ) as client:
            sampled = await client.call_tool("test_sampling", {"prompt": "¿qué luces hay?"})
            elicited = await client.call_tool("test_elicitation", {"message": "¿quién eres?"})
            return client.protocol_version, sampled, elicited

    with hub(live_env, DJANGO_SETTINGS_MODULE=CONFORMANCE_SETTINGS) as base:
        version, sampled, elicited = async_to_sync(scenario)(base)
    assert version == ("2026-07-28" if mode == "auto" else "2025-11-25")
    assert asked == ["¿qué luces hay?", "¿quién eres?"]
    assert sampled.content[0].text == "LLM response: todo apagado"
    assert '"username": "ana"' in elicited.content[0].text and not elicited.is_error


class Agent:
    """A raw Streamable HTTP client of one session, free to send each request anywhere."""

    def __init__(self, http: httpx.AsyncClient, token: str) -> None:
        self.http = http
        self.headers = {"authorization": f"Bearer {token}", "accept": ACCEPT}

    async def initialize(self, base: str) -> None:
        params = {
            "protocolVersion": "2025-11-25",
            "capabilities": CAPABILITIES,
            "clientInfo": {"name": "t", "version": "1"},
        }
        init = await self.http.post(
            base + "/mcp",
            json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params},
            headers=self.headers,
        )
        self.headers["mcp-session-id"] = init.headers["mcp-session-id"]

    async def post(self, base: str, message: dict) -> httpx.Response:
        return await self.http.post(base + "/mcp", json=message, headers=self.headers)

    def call(self, base: str, id: int, name: str, arguments: dict):
        message = {
            "jsonrpc": "2.0",
            "id": id,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        }
        return self.http.stream("POST", base + "/mcp", json=message, headers=self.headers)

    def resume(self, base: str, last_event_id: str):
        headers = {**self.headers, "accept": "text/event-stream", "last-event-id": last_event_id}
        return self.http.stream("GET", base + "/mcp", headers=headers)


async def events(stream: httpx.Response):
    """(id, message or None for an empty data) per SSE event, as they arrive."""
    event_id, data = None, None
    async for line in stream.aiter_lines():
        if line.startswith("id:"):
            event_id = line[3:].strip()
        elif line.startswith("data:"):
            data = line[5:].strip()
        elif line == "" and (event_id or data is not None):
            yield event_id, json.loads(data) if data else None
            event_id, data = None, None


async def until(stream, predicate) -> tuple[list[dict], str | None]:
    """The messages of `stream` (an `events` iterator) up to the first that matches (or the
    end of the stream), and the last event id."""
    seen, last_id = [], None
    async for event_id, message in stream:
        last_id = event_id or last_id
        if message is not None:
            seen.append(message)
            if predicate(message):
                break
    return seen, last_id


def test_answers_cancellations_and_resumes_reach_the_process_running_the_call(
    live_env, make_token, redis_url
):
    token = make_token()

    async def scenario(a: str, b: str) -> dict:
        found = {}
        async with httpx.AsyncClient(timeout=10) as http:
            agent = Agent(http, token)
            await agent.initialize(a)
            await agent.post(b, {"jsonrpc": "2.0", "method": "notifications/initialized"})

            # The elicitation is asked on A's stream; the user's answer is POSTed to B.
            async with agent.call(a, 2, "test_elicitation", {"message": "¿nombre?"}) as response:
                stream = events(response)
                asked, _ = await until(stream, lambda m: m.get("method") == "elicitation/create")
                content = {"username": "ana", "email": "ana@example.com"}
                answer = {
                    "jsonrpc": "2.0",
                    "id": asked[-1]["id"],
                    "result": {"action": "accept", "content": content},
                }
                found["answer_status"] = (await agent.post(b, answer)).status_code
                found["answered"], _ = await until(stream, lambda m: m.get("id") == 2)

            # The call waits for an answer on A; the cancellation is POSTed to B.
            async with agent.call(a, 3, "test_elicitation", {"message": "¿otra vez?"}) as response:
                stream = events(response)
                asked, _ = await until(stream, lambda m: m.get("method") == "elicitation/create")
                found["asked_id"] = asked[-1]["id"]
                cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}}
                found["cancel_status"] = (await agent.post(b, cancel)).status_code
                found["after_cancel"], _ = await until(stream, lambda m: False)

            # A closes the call's stream mid-call; a GET to B resumes it and gets the result.
            async with agent.call(a, 4, "test_reconnection", {}) as response:
                stream = events(response)
                found["cut_off"], last_id = await until(stream, lambda m: False)
            async with agent.resume(b, last_id) as response:
                stream = events(response)
                found["resumed"], _ = await until(stream, lambda m: m.get("id") == 4)
        return found

    async def bounded(a: str, b: str) -> dict:
        return await asyncio.wait_for(scenario(a, b), 60)

    with (
        hub(live_env, DJANGO_SETTINGS_MODULE=CONFORMANCE_SETTINGS, REDIS_URL=redis_url) as a,
        hub(live_env, DJANGO_SETTINGS_MODULE=CONFORMANCE_SETTINGS, REDIS_URL=redis_url) as b,
    ):
        found = async_to_sync(bounded)(a, b)

    assert found["answer_status"] == 202
    result = found["answered"][-1]["result"]
    assert result["isError"] is False and '"username": "ana"' in result["content"][0]["text"]

    assert found["cancel_status"] == 202
    withdrawn = [m for m in found["after_cancel"] if m.get("method") == "notifications/cancelled"]
    assert [m["params"]["requestId"] for m in withdrawn] == [found["asked_id"]]
    assert not [m for m in found["after_cancel"] if m.get("id") == 3]  # cancelled: no response

    assert found["cut_off"] == []  # only the priming event before the server closed the stream
    assert found["resumed"][-1]["result"]["content"][0]["text"] == "Reconnection test completed successfully"


def test_a_resumed_get_stream_replays_what_the_client_missed(live_env, make_token):
    token = make_token()

    async def scenario(base: str) -> tuple[list[dict], list[dict]]:
        async with httpx.AsyncClient(timeout=10) as http:
            agent = Agent(http, token)
            await agent.initialize(base)
            subscribe = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "resources/subscribe",
                "params": {"uri": "home://lights/salon"},
            }
            await agent.post(base, subscribe)
            headers = {**agent.headers, "accept": "text/event-stream"}
            async with http.stream("GET", base + "/mcp", headers=headers) as response:
                stream = events(response)
                priming_id, _ = await stream.__anext__()
                await asyncio.sleep(0.3)  # let the stream join the change group
                switch = {"name": "set_light_state", "arguments": {"name": "salon", "on": True}}
                await agent.post(base, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": switch})
                heard, _ = await until(stream, lambda m: m.get("method") == "notifications/resources/updated")
            # Say the connection broke before that event arrived: resume after the priming event.
            async with agent.resume(base, priming_id) as response:
                replayed, _ = await until(events(response), lambda m: m.get("method") == heard[-1]["method"])
            return heard, replayed

    async def bounded(base: str):
        return await asyncio.wait_for(scenario(base), 30)

    with hub(live_env) as base:
        heard, replayed = async_to_sync(bounded)(base)
    assert heard[-1]["params"] == {"uri": "home://lights/salon"}
    assert replayed == [heard[-1]]


def test_a_websocket_client_is_asked_on_its_socket(live_env, make_token):
    from websockets.asyncio.client import connect

    token = make_token()

    async def scenario(base: str) -> tuple[dict, dict]:
        url = base.replace("http://", "ws://") + "/ws/mcp/"
        async with connect(
            url, additional_headers={"Authorization": f"Bearer {token}"}, subprotocols=["mcp"]
        ) as ws:

            async def next_message() -> dict:
                return json.loads(await asyncio.wait_for(ws.recv(), 10))

            init = {"protocolVersion": "2025-11-25", "capabilities": {"sampling": {}}}
            await ws.send(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}))
            await next_message()
            call = {"name": "test_sampling", "arguments": {"prompt": "¿alarma?"}}
            await ws.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call}))
            asked = await next_message()
            answer = {"role": "assistant", "content": {"type": "text", "text": "desarmada"}, "model": "m"}
            await ws.send(json.dumps({"jsonrpc": "2.0", "id": asked["id"], "result": answer}))
            return asked, await next_message()

    async def bounded(base: str):
        return await asyncio.wait_for(scenario(base), 30)

    with hub(live_env, DJANGO_SETTINGS_MODULE=CONFORMANCE_SETTINGS) as base:
        asked, result = async_to_sync(bounded)(base)
    assert asked["method"] == "sampling/createMessage"
    assert asked["params"]["messages"][0]["content"]["text"] == "¿alarma?"
    assert result["id"] == 1 and result["result"]["content"][0]["text"] == "LLM response: desarmada"
