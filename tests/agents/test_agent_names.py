"""Agent ids that read alike as tool names (`col:dev` and `col_dev` both offer
`col_dev__...`): refused at every registration door, naming the agent that has the names; and
where two exist anyway (registered before the rule), the younger never takes the elder's names,
so the owner's marks on them stay with the elder's tools."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.core.management import CommandError, call_command

from audit.models import Event
from devices.agents.models import Agent, AgentTool
from devices.agents.names import clash, younger_clashes
from devices.agents.services import AgentIdClash, admit_device, hash_device_token, register_agent
from devices.soms.link import AgentBridge, parse_announcement
from devices.xiaozhi.models import Activation
from devices.xiaozhi.services import PairingError, pair
from devices.xiaozhi.simulator import SimulatedDevice
from mcp_endpoint.models import ToolSetting
from tests.agents.test_devices_gateway import http_call, http_request
from tests.devices_support import device_url, eventually, hub
from tests.mcp_endpoint.test_mcp_http import INIT, sse_messages

SYSTEM = Event.Interface.SYSTEM
VOLUME = "col_dev__self_audio_speaker_set_volume"


def test_ids_that_read_alike_clash_and_the_younger_one_is_named():
    assert clash("col:dev", "col_dev") and clash("col dev", "col.dev")
    assert clash("a", "a__b") and clash("a__b", "a")  # `a` with tool `b.c` is `a__b__c`, as `a__b` with `c`
    assert not clash("a", "ab") and not clash("a", "a_b") and not clash("a", "a___b")
    assert younger_clashes([(1, "col:dev"), (2, "other"), (3, "col_dev"), (4, "a__b"), (5, "a")]) == {
        "col_dev": "col:dev",
        "a": "a__b",
    }


@pytest.mark.django_db
def test_every_registration_door_refuses_an_id_that_reads_as_an_existing_agents(staff_client):
    register_agent("col:dev", transport="ws", actor="owner", interface=SYSTEM)

    with pytest.raises(CommandError, match=r"'col_dev' is refused: .* agent 'col:dev'"):
        call_command("register_agent", "col_dev", "--transport", "ws")
    with pytest.raises(AgentIdClash, match="agent 'col:dev'"):
        register_agent("col.dev", transport="mqtt", actor="owner", interface=SYSTEM)

    # Pairing a stock xiaozhi device whose MAC reads as an agent's id.
    register_agent("d8_3b_da_00_00_01", transport="mqtt", actor="owner", interface=SYSTEM)
    Activation.objects.create(
        device_id="d8:3b:da:00:00:01",
        client_id="0b1e1b6a-0000-4000-8000-000000000001",
        code="123456",
        expires_at="2999-01-01T00:00:00Z",
    )
    with pytest.raises(PairingError, match="agent 'd8_3b_da_00_00_01'"):
        pair("123456", actor="owner", interface=Event.Interface.DASHBOARD)

    # An unknown device let in by DEVICES_ACCEPT_UNKNOWN, and the admin's add form.
    assert admit_device("col-dev", "hhd_some-token", accept_unknown=True) is not None  # reads otherwise
    assert admit_device("col?dev", "hhd_some-token", accept_unknown=True) is None
    form = {"agent_id": "col dev", "transport": "ws", "call_timeout": "5"}
    added = staff_client.post(
        "/admin/agents/agent/add/", {**form, "tools-TOTAL_FORMS": "0", "tools-INITIAL_FORMS": "0"}
    )
    assert added.status_code == 200 and "agent &#x27;col:dev&#x27;" in added.content.decode()

    assert set(Agent.objects.values_list("agent_id", flat=True)) == {
        "col:dev",
        "d8_3b_da_00_00_01",
        "col-dev",
    }


@pytest.mark.django_db(transaction=True)
def test_an_mqtt_announcement_of_an_id_that_reads_as_an_agents_is_refused():
    register_agent("col:dev", transport="ws", actor="owner", interface=SYSTEM)

    async def scenario() -> str | None:
        bridge = AgentBridge(lambda topic, payload: None, owner="w", default_silence=60)
        await bridge.start()
        try:
            return await bridge.on_announcement(parse_announcement(b'{"agent_id": "col_dev"}'))
        finally:
            await bridge.stop()

    refusal = async_to_sync(scenario)()
    assert refusal is not None and "agent 'col:dev'" in refusal
    assert not Agent.objects.filter(agent_id="col_dev").exists()


@pytest.mark.live
def test_a_younger_agent_never_takes_over_the_names_of_an_elder_that_reads_alike(live_env, make_token):
    """The owner marked col:dev's volume as needing confirmation; col_dev, registered before ids
    were checked, connects while col:dev is away: its tools are not offered under col:dev's names
    (nor callable), and once col:dev is back the mark is on col:dev's tool, as the owner meant."""
    token = make_token(name="llm")
    _, elder_token = register_agent("col:dev", transport="ws", actor="owner", interface=SYSTEM)
    younger_token = "hhd_registered-before-ids-were-checked"
    Agent.objects.create(
        agent_id="col_dev", transport="ws", approved=True, token_hash=hash_device_token(younger_token)
    )
    ToolSetting.objects.create(name=VOLUME, needs_confirmation=True, updated_by="owner")
    with hub(live_env, MCP_CONFIRMATION_SECONDS="1") as base:
        younger = SimulatedDevice(device_url(base), "col_dev", younger_token)
        elder = SimulatedDevice(device_url(base), "col:dev", elder_token)

        async def scenario():
            await younger.connect()
            await eventually(_discovered("col_dev"), timeout=10)
            await asyncio.sleep(0.5)  # the gateway's view refreshed
            listed_alone = await sync_to_async(_listed)(base, token)
            by_name = await sync_to_async(_call_answer)(base, token, VOLUME, {"volume": 66})
            by_agent = await sync_to_async(http_call)(
                base,
                token,
                "call_agent_tool",
                {"agent_id": "col_dev", "tool": "self.audio_speaker.set_volume", "arguments": {"volume": 67}},
            )
            await elder.connect()
            await eventually(_discovered("col:dev"), timeout=10)
            await eventually(lambda: sync_to_async(lambda: VOLUME in _listed(base, token))(), timeout=10)
            listed_both = await sync_to_async(_listed)(base, token)
            marked = await sync_to_async(http_call)(base, token, VOLUME, {"volume": 68})
            await younger.close()
            await elder.close()
            return listed_alone, by_name, by_agent, listed_both, marked

        listed_alone, by_name, by_agent, listed_both, marked = async_to_sync(scenario)()

    assert not [name for name in listed_alone if name.startswith("col_dev")]
    assert by_name["error"]["message"] == f"Unknown tool: {VOLUME}" and younger.state.volume != 66
    assert by_agent["isError"] and "names of agent 'col:dev'" in by_agent["content"][0]["text"]
    assert younger.state.volume != 67
    # Under those names, col:dev's own tools only (none of col_dev's, hashed or not); the mark
    # held its call for a person.
    assert VOLUME in listed_both
    assert len([n for n in listed_both if n.startswith("col_dev")]) == len(elder.tools)
    assert marked["isError"] and "confirmation" in marked["content"][0]["text"]
    assert elder.state.volume != 68 and younger.state.volume != 68


def _discovered(agent_id: str):
    @sync_to_async
    def check() -> bool:
        return AgentTool.objects.filter(agent__agent_id=agent_id, available=True).exists()

    return check


def _listed(base: str, token: str) -> list[str]:
    return [tool["name"] for tool in http_request(base, token, "tools/list")["tools"]]


def _call_answer(base: str, token: str, name: str, arguments: dict) -> dict:
    """The whole JSON-RPC answer to a tools/call over /mcp (an unknown tool is an error)."""
    headers = {
        "authorization": f"Bearer {token}",
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
    }
    with httpx.Client(base_url=base, headers=headers, timeout=10) as http:
        session = http.post("/mcp", json=INIT).headers["mcp-session-id"]
        body = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        }
        answer = http.post("/mcp", json=body, headers={"mcp-session-id": session})
    return sse_messages(answer.text)[-1]


@pytest.mark.django_db(transaction=True)
def test_agents_pending_approval_are_bounded(settings):
    """Anyone a broker lets publish may announce: past DEVICES_PENDING_MAX agents waiting for
    the owner, a new one is refused, saying why; a known agent's announcements still count."""
    settings.DEVICES_PENDING_MAX = 2

    async def scenario() -> list[str | None]:
        bridge = AgentBridge(lambda topic, payload: None, owner="w", default_silence=60)
        await bridge.start()
        try:
            return [
                await bridge.on_announcement(parse_announcement(f'{{"agent_id": "{agent_id}"}}'.encode()))
                for agent_id in ("stranger_1", "stranger_2", "stranger_3", "stranger_1")
            ]
        finally:
            await bridge.stop()

    refusals = async_to_sync(scenario)()
    assert refusals[:2] == [None, None] and refusals[3] is None
    assert refusals[2] == (
        "2 agents already wait for the owner's approval (DEVICES_PENDING_MAX): approve or delete them first"
    )
    assert admit_device("stranger_4", "hhd_token", accept_unknown=True) is None
    assert set(Agent.objects.values_list("agent_id", flat=True)) == {"stranger_1", "stranger_2"}
