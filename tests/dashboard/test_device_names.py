"""Devices named as the household calls them (issue #28): an owner's label, else the name the
device announced, else "<Room> device", else a short id, never a bare MAC; the owner renames a
device from its card on the Devices page, and the name shows on Devices, Home's rooms and the
Activity's sentences, with the agent id kept beside it on the card."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from audit.models import Event
from automations.models import Room, RoomAgent
from dashboard.activity import device_labels, named_targets
from dashboard.sentences import action_phrase, event_sentence, targets_named
from devices.agents import services
from devices.agents.models import Agent
from devices.agents.selectors import display_name
from tests.hub_support import create_account

MAC = "aa:bb:cc:dd:ee:ff"


def test_a_device_is_named_by_its_label_its_announcement_its_room_or_a_short_id():
    assert display_name(MAC, "Kitchen speaker", {"name": "xiaozhi"}, "Cocina") == "Kitchen speaker"
    assert display_name(MAC, "", {"name": " xiaozhi-esp32 ", "version": "1"}, "Cocina") == "xiaozhi-esp32"
    assert display_name(MAC, "", {}, "Cocina") == "Cocina device"
    assert display_name(MAC, "", {}) == "Device ee:ff"
    assert display_name("door", "", None) == "door"


@pytest.fixture
def agent(db):
    return Agent.objects.create(agent_id=MAC, approved=True, transport=Agent.Transport.MQTT)


def test_renaming_is_audited_and_bad_input_names_its_field(agent):
    assert services.set_agent_label(MAC, "  Kitchen   speaker ", actor="boss", interface="dashboard") == (
        "Kitchen speaker"
    )
    assert Agent.objects.get(agent_id=MAC).name == "Kitchen speaker"
    event = Event.objects.get(action="agent.label")
    assert (event.actor, event.target, event.before, event.after) == (
        "boss",
        f"agent:{MAC}",
        {"name": ""},
        {"name": "Kitchen speaker"},
    )
    with pytest.raises(services.LabelError, match=r"^label: at most 100"):
        services.set_agent_label(MAC, "x" * 101, actor="boss", interface="dashboard")
    with pytest.raises(services.LabelError, match=r"^agent_id: no device nope"):
        services.set_agent_label("nope", "Lamp", actor="boss", interface="dashboard")
    services.set_agent_label(MAC, "Kitchen speaker", actor="boss", interface="dashboard")  # unchanged
    assert Agent.objects.get(agent_id=MAC).name == "Kitchen speaker"
    assert Event.objects.filter(action="agent.label").count() == 1


def test_the_device_announcing_itself_again_keeps_the_owners_name(agent):
    services.set_agent_label(MAC, "Kitchen speaker", actor="boss", interface="dashboard")
    services.mqtt_agent_announced(MAC, "s1", {"name": "xiaozhi-esp32"})
    services.agent_discovered(MAC, "s1", server_info={"name": "xiaozhi-esp32"}, capabilities={}, tools=[])
    agent = Agent.objects.get(agent_id=MAC)
    assert agent.name == "Kitchen speaker" and agent.server_info == {"name": "xiaozhi-esp32"}
    services.set_agent_label(MAC, "", actor="boss", interface="dashboard")  # blank: the default again
    assert device_labels()[MAC] == "xiaozhi-esp32"


def test_only_an_owner_renames_a_device(client, agent):
    client.force_login(create_account("ana", "pw-for-tests-only", role="member"))
    assert 'action="/devices/label/"' not in client.get("/devices/").content.decode()
    assert client.post("/devices/label/", {"agent_id": MAC, "label": "Mine"}).status_code == 403
    assert Agent.objects.get(agent_id=MAC).name == "" and not Event.objects.exists()


def test_an_owner_renames_a_device_on_its_card_and_home_shows_the_name(staff_client, agent):
    before = staff_client.get("/devices/").content.decode()
    assert 'action="/devices/label/"' in before and ">Device ee:ff</h2>" in before
    answer = staff_client.post(
        "/devices/label/", {"agent_id": MAC, "label": "x" * 101}, HTTP_ACCEPT="application/json"
    )
    assert answer.status_code == 400 and answer.json()["error"].startswith("label:")
    posted = staff_client.post("/devices/label/", {"agent_id": MAC, "label": "Kitchen speaker"})
    assert posted.status_code == 302 and posted["Location"] == "/devices/"
    page = staff_client.get("/devices/").content.decode()
    assert ">Kitchen speaker</h2>" in page and f"<code>{MAC}</code>" in page  # the id stays beside it
    RoomAgent.objects.create(room=Room.objects.create(name="Cocina"), agent=agent)
    assert "Kitchen speaker" in staff_client.get("/").content.decode()
    staff_client.post("/devices/label/", {"agent_id": MAC, "label": ""})
    home = staff_client.get("/").content.decode()
    assert "Cocina device" in home and MAC not in home


def test_activity_and_requests_name_devices(agent):
    services.set_agent_label(MAC, "Kitchen speaker", actor="boss", interface="dashboard")
    labels = device_labels()
    assert action_phrase(
        "aa_bb_cc_dd_ee_ff__self_audio_speaker_set_volume", {"volume": 3}, device_labels=labels
    ) == ("run self_audio_speaker_set_volume on Kitchen speaker")
    call = SimpleNamespace(
        action="agent.call",
        target=f"agent:{MAC}",
        actor="Claude",
        interface="mcp-http",
        before={"tool": "self.reboot", "arguments": {}},
        after={"ok": True},
    )
    assert event_sentence(call, {}, labels) == "Claude ran self.reboot on Kitchen speaker through /mcp"
    renamed = Event.objects.get(action="agent.label")
    assert event_sentence(renamed, {}, labels) == "boss named the device Kitchen speaker from the dashboard"
    assert targets_named("KITCHEN", named_targets()) == [f"agent:{MAC}"]  # Activity searched by the name
