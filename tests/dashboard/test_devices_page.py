"""The Devices page as a household uses it: a tool's result in plain words (text as text,
structure as a small table, errors marked, never raw MCP JSON), a form posted without script
answered with a redirect (303) so that reloading never calls the device again, each device's
state (offline since when), and an owner removing an offline device."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from audit.models import Event
from dashboard.toolresults import readable_result
from devices.agents.models import Agent, AgentTool
from tests.agents.test_devices_outcomes import AGENT, TOOL, device_as  # noqa: F401 (fixture)
from tests.hub_support import create_account


def test_results_read_as_words_and_tables():
    status = '{"audio_speaker": {"volume": 70}, "battery": {"level": 87, "charging": false}}'
    assert readable_result({"content": [{"type": "text", "text": status}], "isError": False}) == {
        "error": False,
        "texts": [],
        "rows": [["Audio speaker · volume", "70"], ["Battery · level", "87"], ["Battery · charging", "no"]],
    }
    assert readable_result({"content": [{"type": "text", "text": "true"}]})["texts"] == ["Done."]
    said = readable_result({"content": [{"type": "text", "text": "Volume set to 40"}]})
    assert said == {"error": False, "texts": ["Volume set to 40"], "rows": []}
    structured = readable_result(
        {"content": [{"type": "text", "text": "ok"}], "structuredContent": {"room_name": "Salón", "on": True}}
    )
    assert structured["texts"] == ["ok"] and structured["rows"] == [["Room name", "Salón"], ["On", "yes"]]
    failed = readable_result({"content": [{"type": "text", "text": "Invalid theme: blue"}], "isError": True})
    assert failed == {"error": True, "texts": ["Invalid theme: blue"], "rows": []}
    assert readable_result({"content": []})["texts"] == ["Done (no details)."]


def calls_made() -> int:
    return Event.objects.filter(action="agent.call").count()


def test_a_form_without_script_redirects_and_a_reload_calls_nothing(staff_client, device_as):  # noqa: F811
    device_as("answer")
    posted = staff_client.post("/devices/", {"agent_id": AGENT, "tool": TOOL})
    assert posted.status_code == 303 and posted["Location"] == "/devices/#call-result"
    assert calls_made() == 1
    shown = staff_client.get("/devices/").content.decode()
    result = shown.split('id="call-result"', 1)[1].split("</section>", 1)[0]
    assert f"Result of {TOOL} on {AGENT}" in result and '<p class="tool-result-text">done</p>' in result
    assert "badge-on" in result and "&#x27;content&#x27;" not in shown and "isError" not in shown
    reloaded = staff_client.get("/devices/").content.decode()  # the result was for one display
    assert 'id="call-result"' not in reloaded and calls_made() == 1


def test_a_failed_call_is_marked_as_an_error(staff_client, device_as):  # noqa: F811
    device_as("error")
    staff_client.post("/devices/", {"agent_id": AGENT, "tool": TOOL})
    shown = staff_client.get("/devices/").content.decode()
    result = shown.split('id="call-result"', 1)[1].split("</section>", 1)[0]
    assert "tool-result is-error" in result and ">Error</span>" in result
    assert "volume out of range" in result


def test_a_fetch_gets_the_outcome_rendered(staff_client, device_as):  # noqa: F811
    device_as("answer")
    answer = staff_client.post("/devices/", {"agent_id": AGENT, "tool": TOOL}, HTTP_ACCEPT="application/json")
    body = answer.json()
    assert answer.status_code == 200 and body["result"]["content"][0]["text"] == "done"
    assert '<p class="tool-result-text">done</p>' in body["html"]
    bad = staff_client.post("/devices/", {"agent_id": AGENT, "tool": "nope"}, HTTP_ACCEPT="application/json")
    assert bad.status_code == 404 and "is-error" in bad.json()["html"]
    assert staff_client.get("/devices/").content.decode().count('id="call-result"') == 0  # nothing kept


@pytest.fixture
def offline_agent(db):
    agent = Agent.objects.create(
        agent_id="aa:bb:cc",
        name="Desk lamp",
        approved=True,
        online=False,
        last_seen=timezone.now() - timedelta(minutes=5),
    )
    AgentTool.objects.create(agent=agent, name="self.get_device_status")
    return agent


def test_an_offline_device_says_since_when(staff_client, offline_agent):
    html = staff_client.get("/devices/").content.decode()
    clock = timezone.localtime(offline_agent.last_seen).strftime("%H:%M")
    assert f'Offline since <time datetime="{offline_agent.last_seen.isoformat()}">{clock}</time>' in html
    assert "Remove this device…" in html and "Yes, remove it" in html


def test_an_owner_removes_an_offline_device(staff_client, offline_agent):
    page = staff_client.post("/devices/remove/", {"agent_id": "aa:bb:cc"}, follow=True).content.decode()
    assert "Device aa:bb:cc removed" in page and "Desk lamp" not in page
    assert not Agent.objects.filter(agent_id="aa:bb:cc").exists() and not AgentTool.objects.exists()
    event = Event.objects.get(action="agent.remove")
    assert (event.actor, event.interface, event.target) == ("boss", "dashboard", "agent:aa:bb:cc")
    assert event.before["tools"] == ["self.get_device_status"]


def test_an_online_device_is_not_removed(staff_client, offline_agent):
    Agent.objects.filter(pk=offline_agent.pk).update(online=True)
    assert "Remove this device…" not in staff_client.get("/devices/").content.decode()
    answer = staff_client.post("/devices/remove/", {"agent_id": "aa:bb:cc"}, HTTP_ACCEPT="application/json")
    assert answer.status_code == 400 and "online or already gone" in answer.json()["error"]
    assert Agent.objects.filter(agent_id="aa:bb:cc").exists() and not Event.objects.exists()


def test_only_an_owner_removes_a_device(client, offline_agent):
    client.force_login(create_account("ana", "pw-for-tests-only", role="member"))
    assert "Remove this device…" not in client.get("/devices/").content.decode()
    assert client.post("/devices/remove/", {"agent_id": "aa:bb:cc"}).status_code == 403
    assert Agent.objects.filter(agent_id="aa:bb:cc").exists()
