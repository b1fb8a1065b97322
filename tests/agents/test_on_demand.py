"""Honest presence: a device that connects only while someone talks to it (stock xiaozhi
firmware) says so, with when it was last reachable, in list_agents, the REST API and the
Devices page; a call to it while offline fails at once, saying why."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import jsonschema
from asgiref.sync import async_to_sync

from devices.agents.models import Agent, AgentTool
from mcp_endpoint.auth.tokens import create_token
from tests.mcp_helpers import Peer

MAC = "aa:bb:cc:dd:ee:01"
LAST = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


def _on_demand_agent(**fields) -> Agent:
    agent = Agent.objects.create(
        agent_id=MAC,
        name="Kitchen speaker",
        connects_on_demand=True,
        last_seen=LAST,
        **{"approved": True, **fields},
    )
    AgentTool.objects.create(agent=agent, name="self.audio_speaker.set_volume", available=False)
    return agent


def test_list_agents_says_the_device_connects_on_demand_and_when_it_was_reachable(db):
    _on_demand_agent()
    Agent.objects.create(agent_id="always-on", online=True, approved=True)

    async def scenario() -> dict:
        peer = Peer()
        await peer.initialize()
        return await peer.call("list_agents", {})

    listed = {a["agent_id"]: a for a in async_to_sync(scenario)()["result"]["structuredContent"]["agents"]}
    assert listed[MAC]["connects_on_demand"] is True and listed[MAC]["online"] is False
    assert listed[MAC]["last_seen"] == LAST.isoformat()
    assert listed["always-on"]["connects_on_demand"] is False


def test_list_agents_answers_as_its_output_schema_says_for_a_device_never_reached(db):
    """A device registered but never connected has no last_seen: the answer says null, as the
    schema requires, where it once left the key out (a client that checks answers against the
    schema, as the official SDK does, refused the whole list)."""
    Agent.objects.create(agent_id="never-reached", approved=True)

    async def scenario() -> tuple[dict, dict]:
        peer = Peer()
        await peer.initialize()
        listed = await peer.request("tools/list", id=2)
        return listed, await peer.call("list_agents", {}, id=3)

    listed, answer = async_to_sync(scenario)()
    schema = next(t["outputSchema"] for t in listed["result"]["tools"] if t["name"] == "list_agents")
    structured = answer["result"]["structuredContent"]
    jsonschema.validate(structured, schema)
    assert structured["agents"][0]["last_seen"] is None


def test_a_call_while_nobody_talks_to_it_fails_at_once_saying_so(db, client):
    _on_demand_agent()

    async def scenario() -> dict:
        peer = Peer()
        await peer.initialize()
        return await peer.call(
            "call_agent_tool", {"agent_id": MAC, "tool": "self.audio_speaker.set_volume", "arguments": {}}
        )

    started = time.monotonic()
    answer = async_to_sync(scenario)()["result"]
    assert time.monotonic() - started < 2  # no waiting for a device that is not there
    text = answer["content"][0]["text"]
    assert answer["isError"]
    assert "connects to the hub only while someone is talking to it" in text
    assert "last reachable 2026-05-01T12:00:00+00:00" in text

    token = create_token("integrator", ["devices", "read"], actor="test", interface="system")[1]
    rest = client.post(
        f"/api/agents/{MAC}/tools/self.audio_speaker.set_volume/call",
        {},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert rest.status_code == 409 and "only while someone is talking to it" in rest.json()["detail"]
    row = client.get(f"/api/agents/{MAC}", HTTP_AUTHORIZATION=f"Bearer {token}").json()
    assert row["connects_on_demand"] is True and row["last_seen"].startswith("2026-05-01T12:00:00")


def test_the_devices_page_shows_it(staff_client):
    _on_demand_agent()
    html = staff_client.get("/devices/").content.decode()
    assert "Connects when spoken to" in html
    assert "connects to the hub only while someone is talking to it" in html
    assert "Last reachable" in html and 'datetime="2026-05-01T12:00:00+00:00"' in html
    Agent.objects.filter(agent_id=MAC).update(online=True)
    html = staff_client.get("/devices/").content.decode()
    assert "Connects when spoken to" not in html and ">Online<" in html and "<dd>now</dd>" in html
