"""LLM agents using device tools through the gateway, against a live daphne and simulated devices."""

import asyncio
import json

import httpx
import pytest
from asgiref.sync import async_to_sync, sync_to_async

from audit.models import Event
from devices.agents.models import Agent, AgentTool
from tests.devices_support import LlmSession, dashboard_call, eventually, hub, new_device
from tests.mcp_endpoint.test_mcp_http import INIT, sse_messages
from tests.mcp_endpoint.test_mcp_tasks_live import rpc

pytestmark = pytest.mark.live
MAC = "aa:bb:cc:00:00:02"
PREFIX = "aa_bb_cc_00_00_02__"
VOLUME = PREFIX + "self_audio_speaker_set_volume"


def http_request(base: str, token: str, method: str, params: dict | None = None) -> dict:
    """One MCP request over /mcp in a fresh session; its result."""
    headers = {
        "authorization": f"Bearer {token}",
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
    }
    with httpx.Client(base_url=base, headers=headers, timeout=10) as http:
        session = http.post("/mcp", json=INIT).headers["mcp-session-id"]
        body = {"jsonrpc": "2.0", "id": 2, "method": method, "params": params or {}}
        answer = http.post("/mcp", json=body, headers={"mcp-session-id": session})
    return sse_messages(answer.text)[-1]["result"]


def http_call(base: str, token: str, name: str, arguments: dict) -> dict:
    return http_request(base, token, "tools/call", {"name": name, "arguments": arguments})


def test_calls_over_http_and_websocket_reach_the_device(live_env, make_token):
    token = make_token(name="llm")
    with hub(live_env) as base:
        device = new_device(base, MAC)

        async def scenario():
            await device.connect()
            async with LlmSession(base, token) as llm:
                await eventually(lambda: llm.tool_names())
                names = await eventually(lambda: _has(llm, VOLUME))
                over_http = await sync_to_async(http_call)(base, token, VOLUME, {"volume": 40})
                status = await llm.call(
                    "call_agent_tool", {"agent_id": MAC, "tool": "self.get_device_status", "arguments": {}}
                )
                no_code = await llm.call(VOLUME, {"volume": 150})
                unknown = await llm.call("call_agent_tool", {"agent_id": MAC, "tool": "self.nope"})
                stranger = await llm.call("call_agent_tool", {"agent_id": "nobody", "tool": "self.x"})
                agents = await llm.call("list_agents", {})
            await device.close()
            return names, over_http, status, no_code, unknown, stranger, agents

        names, over_http, status, no_code, unknown, stranger, agents = async_to_sync(scenario)()

    assert {
        PREFIX + s for s in ("self_get_device_status", "self_screen_set_theme", "self_lamp_set_power")
    } <= names
    assert over_http == {"content": [{"type": "text", "text": "true"}], "isError": False}
    assert device.state.volume == 40
    assert json.loads(status["content"][0]["text"])["audio_speaker"] == {"volume": 40}
    # The firmware's error has no code: its message reaches the model as a tool error.
    assert no_code["isError"] and "out of range [0, 100]" in no_code["content"][0]["text"]
    assert unknown["isError"] and "has no tool 'self.nope'" in unknown["content"][0]["text"]
    assert stranger["isError"] and "Unknown agent 'nobody'" in stranger["content"][0]["text"]
    listed = agents["structuredContent"]["agents"][0]
    assert listed["agent_id"] == MAC and listed["online"]
    assert {t["gateway_name"] for t in listed["tools"]} == {n for n in names if n.startswith(PREFIX)}
    audits = Event.objects.filter(action="agent.call", target=f"agent:{MAC}").order_by("id")
    assert [(e.actor, e.before["tool"], e.after["ok"]) for e in audits] == [
        ("llm", "self.audio_speaker.set_volume", True),
        ("llm", "self.get_device_status", True),
        ("llm", "self.audio_speaker.set_volume", False),
        ("llm", "self.nope", False),
    ]
    assert all("ms" in e.after for e in audits)
    assert {e.interface for e in audits} == {"mcp-http", "mcp-ws"}


async def _has(llm: LlmSession, name: str) -> set[str] | None:
    names = await llm.tool_names()
    return names if name in names else None


async def _lacks(llm: LlmSession, name: str) -> bool:
    return name not in await llm.tool_names()


async def _until_list_changed(llm: LlmSession) -> list[dict]:
    """The notifications heard up to and with the next list_changed."""
    heard = []
    async with asyncio.timeout(5):
        while not heard or heard[-1].get("method") != "notifications/tools/list_changed":
            heard.append(await llm.notifications.get())
    return heard


def _logs(heard: list[dict]) -> list[dict]:
    return [m["params"] for m in heard if m.get("method") == "notifications/message"]


def test_list_changed_when_devices_come_and_go(live_env, make_token):
    """Every session hears list_changed; a client that asked for logs (info) also hears which
    device's tools were discovered, and that they went away."""
    token = make_token(scopes=["devices"])
    with hub(live_env) as base:
        device = new_device(base, MAC)

        async def scenario():
            async with LlmSession(base, token) as llm, LlmSession(base, token) as quiet:
                assert (await llm.request("logging/setLevel", {"level": "info"}))["result"] == {}
                before = await llm.tool_names()
                await device.connect()
                came = await _until_list_changed(llm), await _until_list_changed(quiet)
                during = await eventually(lambda: _has(llm, VOLUME))
                await device.close()
                went = await _until_list_changed(llm), await _until_list_changed(quiet)
                after = await llm.tool_names()
            return before, during, after, came, went

        before, during, after, came, went = async_to_sync(scenario)()

    assert before == after == {"list_agents", "call_agent_tool"}
    assert len(during - before) == 5
    [online] = _logs(came[0])
    assert (online["level"], online["logger"]) == ("info", "homehub.devices")
    assert online["data"]["agent_id"] == MAC and "online: 5 tools discovered" in online["data"]["message"]
    assert "self.audio_speaker.set_volume" in online["data"]["tools"]
    [gone] = _logs(went[0])
    assert "went away" in gone["data"]["message"] and gone["data"]["agent_id"] == MAC
    assert _logs(came[1]) == _logs(went[1]) == []  # no logs for a client that did not ask


def test_disconnect_mid_call_and_timeout(live_env, make_token):
    token = make_token()
    with hub(live_env) as base:
        dropper = new_device(base, MAC, drop_on_call=True)
        sleeper = new_device(base, "slow-one", reply_delay=0.6)
        Agent.objects.filter(agent_id="slow-one").update(call_timeout=0.5)

        async def scenario():
            async with LlmSession(base, token) as llm:
                await dropper.connect()
                await eventually(lambda: _has(llm, VOLUME))
                loop = asyncio.get_running_loop()
                started = loop.time()
                dropped = await llm.call(VOLUME, {"volume": 10})
                dropped_after = loop.time() - started
                await eventually(lambda: _lacks(llm, VOLUME))
                offline = await llm.call(
                    "call_agent_tool", {"agent_id": MAC, "tool": "self.get_device_status"}
                )
                await sleeper.connect()
                await eventually(lambda: _has(llm, "slow-one__self_get_device_status"))
                started = loop.time()
                timed_out = await llm.call("slow-one__self_get_device_status", {})
                timed_out_after = loop.time() - started
                await sleeper.close()
            return dropped, dropped_after, offline, timed_out, timed_out_after

        dropped, dropped_after, offline, timed_out, timed_out_after = async_to_sync(scenario)()

    assert dropped["isError"] and "disconnected before answering" in dropped["content"][0]["text"]
    assert dropped_after < 2  # at once, not after the 30 s timeout
    assert offline["isError"] and f"Agent '{MAC}' is offline" in offline["content"][0]["text"]
    assert timed_out["isError"] and "did not answer" in timed_out["content"][0]["text"]
    assert 0.5 <= timed_out_after < 2
    assert not Agent.objects.get(agent_id=MAC).online
    assert not AgentTool.objects.filter(agent__agent_id=MAC, available=True).exists()


def test_the_dashboard_form_calls_a_device_of_the_serving_process(live_env, django_user_model):
    """The form's view waits, in its request's thread, for the call it started on the serving
    loop: the call's database work must not be sent to that same thread (it hung until this
    was fixed in devices/agents/calls.py)."""
    django_user_model.objects.create_superuser("boss", "boss@example.com", "pw-for-tests-only")
    with hub(live_env) as base:
        device = new_device(base, MAC)

        async def scenario():
            await device.connect()
            await eventually(lambda: sync_to_async(AgentTool.objects.filter(agent__agent_id=MAC).exists)())
            form = await sync_to_async(dashboard_call)(
                base, MAC, "self.audio_speaker.set_volume", **{"arg-volume": "21"}
            )
            await device.close()
            return form

        form = async_to_sync(scenario)()
    assert form.status_code == 200 and form.json()["result"]["content"][0]["text"] == "true"
    assert device.state.volume == 21


def test_a_device_call_made_a_task_ends_with_the_devices_answer(live_env, make_token):
    """`call_agent_tool` for a client that declared MCP's tasks extension: answered with a task,
    whose result (read with tasks/get) is the device's answer."""
    token = make_token(name="llm")
    with hub(live_env) as base:
        device = new_device(base, MAC)

        async def scenario():
            await device.connect()
            async with LlmSession(base, token) as llm:
                await eventually(lambda: _has(llm, VOLUME))
                arguments = {
                    "agent_id": MAC,
                    "tool": "self.audio_speaker.set_volume",
                    "arguments": {"volume": 25},
                }
                _, created = await sync_to_async(rpc)(
                    base + "/mcp",
                    token,
                    "tools/call",
                    "call_agent_tool",
                    name="call_agent_tool",
                    arguments=arguments,
                )
                task_id = created["result"]["taskId"]
                for _ in range(100):
                    _, task = await sync_to_async(rpc)(
                        base + "/mcp", token, "tasks/get", task_id, taskId=task_id
                    )
                    if task["result"]["status"] != "working":
                        break
                    await asyncio.sleep(0.1)
            await device.close()
            return created["result"], task["result"]

        created, task = async_to_sync(scenario)()

    assert created["resultType"] == "task"
    assert task["status"] == "completed"
    assert task["result"]["content"] == [{"type": "text", "text": "true"}]
    assert device.state.volume == 25
