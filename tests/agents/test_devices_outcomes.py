"""Typed outcomes of device calls (devices/agents/outcomes.py): each way a call can end is its
own type, crosses the channel layer as that type, and reaches every door as the answer of its
type: an MCP tool error with its message, the REST API's and the dashboard's HTTP status."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import UTC, datetime
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from audit.models import Event
from common.groups import receive_forever
from devices.agents import agent_channels, outcomes
from devices.agents.calls import HTTP_STATUS, http_status
from devices.agents.gateway import gateway
from devices.agents.link import DeviceLink, local_links
from devices.agents.models import Agent, AgentTool
from devices.agents.outcomes import (
    CallFailed,
    CallRefused,
    CallResult,
    DeviceError,
    DeviceGone,
    DeviceTimeout,
    HubStopping,
    UnknownAgent,
    UnknownTool,
)
from mcp_endpoint.auth.tokens import create_token
from mcp_endpoint.client.mcp_client import McpClient
from mcp_endpoint.engine.tools import Caller
from tests.mcp_helpers import Peer

AGENT = "scripted-device"
TOOL = "self.do"


class ScriptedDevice(DeviceLink):
    """A device whose every `tools/call` ends as its script says: an answer, an error, a hang-up,
    silence, or a failure of the link itself."""

    def __init__(self, script: str, channel: str = "") -> None:
        super().__init__(AGENT, layer=get_channel_layer(), channel=channel)
        self.script = script
        self.client = McpClient(self.send)

    async def register(self) -> Agent | None:
        return None  # never attached here: the tests put it in place themselves

    async def hang_up(self) -> None:
        pass

    async def send(self, payload: dict[str, Any]) -> None:
        assert self.client is not None
        reply = {"jsonrpc": "2.0", "id": payload["id"]}
        if self.script == "answer":
            await self.client.feed({**reply, "result": {"content": [{"type": "text", "text": "done"}]}})
        elif self.script == "error":
            await self.client.feed({**reply, "error": {"code": -32602, "message": "volume out of range"}})
        elif self.script == "hang-up":
            self.client.close("the device disconnected")
        elif self.script == "broken":
            raise RuntimeError("the radio broke")
        # "silence": no answer


# script or state of the agent -> (the failure, words of its message, HTTP status)
FAILING = {
    "error": (DeviceError, "refused tool 'self.do': volume out of range (code -32602)", 502),
    "hang-up": (DeviceGone, "disconnected before answering tool 'self.do'", 409),
    "silence": (DeviceTimeout, "did not answer tool 'self.do' within 0.2 s", 504),
    "broken": (CallFailed, "could not run tool 'self.do': the radio broke", 500),
    "offline": (DeviceGone, f"Agent '{AGENT}' is offline (last reachable 2026-", 409),
    "on demand": (
        DeviceGone,
        f"Agent '{AGENT}' connects to the hub only while someone is talking to it",
        409,
    ),
    "pending": (CallRefused, "waiting for an administrator's approval", 409),
    "unavailable tool": (UnknownTool, f"has no tool '{TOOL}'", 404),
}
SCRIPTS = ("answer", "error", "hang-up", "silence", "broken")


def _agent_as(state: str) -> None:
    """The agent in the database as `state` needs it: online with its tool, unless not."""
    offline = state in ("offline", "on demand")
    agent = Agent.objects.create(
        agent_id=AGENT,
        online=not offline,
        approved=state != "pending",
        connects_on_demand=state == "on demand",
        last_seen=datetime(2026, 5, 1, 12, 0, tzinfo=UTC) if offline else None,
        call_timeout=0.2,
        session_id="s1",
    )
    AgentTool.objects.create(agent=agent, name=TOOL, input_schema={}, available=state != "unavailable tool")


@pytest.fixture
def device_as():
    """Put the agent in `state`; a script also connects its device to this process."""

    def put(state: str) -> None:
        _agent_as(state)
        if state in SCRIPTS:
            local_links[AGENT] = ScriptedDevice(state)
        async_to_sync(gateway.refresh)([AGENT])  # the gateway's view of the agent, from this test

    yield put
    local_links.pop(AGENT, None)
    async_to_sync(gateway.refresh)([AGENT])


def test_every_failure_has_an_http_status_and_a_wire_form():
    assert set(HTTP_STATUS) == set(outcomes.FAILURES.values())
    assert http_status(HubStopping.now()) == 503 and http_status(UnknownAgent.named("x")) == 404
    for failure_type in outcomes.FAILURES.values():
        failure = failure_type("why")
        with pytest.raises(failure_type) as rebuilt:
            outcomes.from_wire(outcomes.to_wire(failure))
        assert type(rebuilt.value) is failure_type and rebuilt.value.message == "why"
    result = CallResult(content=[{"type": "text", "text": "1"}], structured={"v": 1}, is_error=True)
    assert outcomes.from_wire(outcomes.to_wire(result)) == result
    assert CallResult.from_mcp({"content": "not a list", "structuredContent": [1]}) == CallResult(content=[])


@pytest.mark.parametrize("state", sorted(FAILING))
def test_each_failure_reaches_the_mcp_door_as_a_tool_error(db, device_as, state):
    device_as(state)

    async def scenario() -> dict:
        peer = Peer()
        await peer.initialize()
        return await peer.call("call_agent_tool", {"agent_id": AGENT, "tool": TOOL})

    answer = async_to_sync(scenario)()["result"]
    assert answer["isError"] and FAILING[state][1] in answer["content"][0]["text"]
    audit = Event.objects.get(action="agent.call")  # once, by the gateway
    assert audit.after["ok"] is False and FAILING[state][1] in audit.after["error"]


@pytest.mark.parametrize("state", sorted(FAILING))
def test_each_failure_reaches_rest_and_the_dashboard_with_the_status_of_its_type(
    client, staff_client, device_as, state
):
    device_as(state)
    failure, words, status = FAILING[state]
    token = create_token("integrator", ["devices"], actor="test", interface="system")[1]
    rest = client.post(
        f"/api/agents/{AGENT}/tools/{TOOL}/call",
        {"arguments": {}},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert (rest.status_code, http_status(failure(""))) == (status, status)
    assert words in rest.json()["detail"]
    form = staff_client.post("/devices/", {"agent_id": AGENT, "tool": TOOL}, HTTP_ACCEPT="application/json")
    assert form.status_code == status and words in form.json()["error"]


def test_an_answer_reaches_every_door(client, staff_client, device_as):
    device_as("answer")
    token = create_token("integrator", ["devices"], actor="test", interface="system")[1]
    rest = client.post(
        f"/api/agents/{AGENT}/tools/{TOOL}/call",
        {},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert rest.status_code == 200 and rest.json() == {
        "content": [{"type": "text", "text": "done"}],
        "structuredContent": None,
        "isError": False,
    }
    form = staff_client.post("/devices/", {"agent_id": AGENT, "tool": TOOL}, HTTP_ACCEPT="application/json")
    assert form.status_code == 200 and form.json()["result"]["content"][0]["text"] == "done"


def test_unknown_agents_are_404_at_every_door(client, staff_client, db):
    token = create_token("integrator", ["devices"], actor="test", interface="system")[1]
    rest = client.post(
        "/api/agents/nobody/tools/t/call",
        {},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert rest.status_code == 404
    assert (
        staff_client.post(
            "/devices/", {"agent_id": "nobody", "tool": "t"}, HTTP_ACCEPT="application/json"
        ).status_code
        == 404
    )

    async def scenario() -> tuple[dict, type[CallFailed]]:
        peer = Peer()
        await peer.initialize()
        answer = await peer.call("call_agent_tool", {"agent_id": "nobody", "tool": "t"})
        try:
            await gateway.call("nobody", "t", {}, Caller("tester", "mcp-stdio"))
        except CallFailed as failure:
            return answer, type(failure)
        raise AssertionError("called an unknown agent")

    answer, raised = async_to_sync(scenario)()
    assert answer["result"]["isError"] and "Unknown agent 'nobody'" in answer["result"]["content"][0]["text"]
    assert raised is UnknownAgent


@pytest.mark.parametrize("script", SCRIPTS)
def test_outcomes_cross_the_channel_layer_as_their_types(transactional_db, device_as, script):
    """A device connected to another process: its link answers on the reply channel, and the
    caller's gateway rebuilds the outcome, of the same type with the same words."""
    device_as(script)
    local = local_links.pop(AGENT)  # as if connected elsewhere

    async def outcome_of(link: DeviceLink | None) -> CallResult | CallFailed:
        try:
            if link is not None:
                return await link.serve(TOOL, {}, 0.2)
            return await gateway.call(AGENT, TOOL, {}, Caller("tester", "mcp-stdio"))
        except CallFailed as failure:
            return failure

    async def scenario() -> tuple[Any, Any]:
        layer = get_channel_layer()
        channel = await layer.new_channel()
        remote = ScriptedDevice(script, channel)
        await layer.group_add(agent_channels.agent_group(AGENT), channel)
        listening = asyncio.ensure_future(receive_forever(layer, channel, remote.handle, "remote device"))
        try:
            return await outcome_of(local), await outcome_of(None)
        finally:
            listening.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await listening
            await layer.group_discard(agent_channels.agent_group(AGENT), channel)

    here, there = async_to_sync(scenario)()
    assert type(here) is type(there)
    assert (here.message if isinstance(here, CallFailed) else here) == (
        there.message if isinstance(there, CallFailed) else there
    )


def test_rest_and_dashboard_calls_go_through_the_one_pipeline(client, staff_client, device_as):
    """Counted in /metrics per door, as every MCP transport's calls are (`call_agent_tool`)."""
    from prometheus_client import REGISTRY

    def counted(door: str) -> float:
        labels = {"tool": "call_agent_tool", "outcome": "ok", "interface": door}
        return REGISTRY.get_sample_value("homehub_mcp_tool_calls_total", labels) or 0.0

    device_as("answer")
    before = counted("rest"), counted("dashboard")
    token = create_token("integrator", ["devices"], actor="test", interface="system")[1]
    client.post(
        f"/api/agents/{AGENT}/tools/{TOOL}/call",
        {},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    staff_client.post("/devices/", {"agent_id": AGENT, "tool": TOOL}, HTTP_ACCEPT="application/json")
    assert (counted("rest"), counted("dashboard")) == (before[0] + 1, before[1] + 1)


def _call_logs(level: str | None, arguments: dict | None = None) -> tuple[dict, list[dict]]:
    """A device call through an MCP session whose client asked for logs from `level` (None: no
    logging/setLevel): the answer, and the `notifications/message` it heard."""

    async def scenario():
        peer = Peer()
        await peer.initialize()
        if level:
            await peer.request("logging/setLevel", {"level": level})
        answer = await peer.call(
            "call_agent_tool", {"agent_id": AGENT, "tool": TOOL, "arguments": arguments or {}}
        )
        return answer, [m["params"] for m in peer.sent if m.get("method") == "notifications/message"]

    return async_to_sync(scenario)()


def test_a_device_call_tells_the_client_how_it_goes(db, device_as):
    device_as("answer")
    secret = {"wifi_password": "s3cr3t-do-not-log"}
    answer, logs = _call_logs("debug", secret)
    assert answer["result"]["isError"] is False
    assert [(log["level"], log["logger"]) for log in logs] == [("debug", "homehub.devices")] * 2
    assert logs[0]["data"] == {
        "message": f"Calling tool '{TOOL}' of device '{AGENT}'",
        "agent_id": AGENT,
        "tool": TOOL,
    }
    assert logs[1]["data"]["message"].startswith(f"Device '{AGENT}' answered '{TOOL}' in ")
    assert "s3cr3t" not in str(logs)  # the arguments are never logged
    assert _call_logs(None)[1] == [] and _call_logs("info")[1] == []


@pytest.mark.parametrize("state", ["error", "offline"])
def test_a_failed_device_call_is_a_warning(db, device_as, state):
    device_as(state)
    _, logs = _call_logs("debug")
    warnings = [log["data"] for log in logs if log["level"] == "warning"]
    assert len(warnings) == 1 and FAILING[state][1] in warnings[0]["message"]
    assert warnings[0]["failure"] == FAILING[state][0].kind
    if state == "offline":  # not connected to this process: looked up first
        assert any("looking it up" in log["data"]["message"] for log in logs if log["level"] == "debug")
    assert [log["level"] for log in _call_logs("warning")[1]] == ["warning"]
