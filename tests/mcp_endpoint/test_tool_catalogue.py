"""The tool catalogue (issue #19): the owner's settings of every tool, applied by the registry
to every door, and listed in the admin with each tool's scope, annotations and source."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from pydantic import BaseModel

from audit.models import Event
from devices.agents.gateway import gateway
from devices.agents.models import Agent, AgentTool
from devices.agents.names import exposed_name
from devices.agents.outcomes import UnknownTool as UnknownDeviceTool
from mcp_endpoint.controls import catalogue
from mcp_endpoint.engine import jsonrpc
from mcp_endpoint.engine.pipeline import ToolNotFound, call_tool
from mcp_endpoint.engine.registry import ToolRegistry, ToolSettings, registry
from mcp_endpoint.engine.tools import Caller, ToolContext
from mcp_endpoint.models import ToolSetting
from tests.mcp_helpers import Peer, tool_on

AGENT = "kitchen-speaker"
DEVICE_TOOL = "self.audio_speaker.set_volume"


class Nothing(BaseModel):
    pass


def _own_registry() -> ToolRegistry:
    tools = ToolRegistry()

    @tool_on(tools, scope="read", read_only=True)
    def lamp_level(args: Nothing, ctx: ToolContext) -> dict:
        """How bright the lamp is"""
        return {"level": 3}

    @tool_on(tools, scope="control", destructive=True)
    def unlock_door(args: Nothing, ctx: ToolContext) -> dict:
        """Unlocks the front door"""
        return {"ok": True}

    return tools


@pytest.fixture(autouse=True)
def _no_settings_left_over():
    """The hub's registry is the process's: no test leaves its settings to the next."""
    yield
    registry.apply_settings({})


@pytest.fixture
def device(db):
    """An online device with one tool, in this process's gateway view."""
    agent = Agent.objects.create(agent_id=AGENT, name="Kitchen", online=True, approved=True, session_id="s1")
    AgentTool.objects.create(agent=agent, name=DEVICE_TOOL, description="Sets the volume", input_schema={})
    async_to_sync(gateway.refresh)([AGENT])
    yield exposed_name(AGENT, DEVICE_TOOL)
    Agent.objects.filter(agent_id=AGENT).delete()
    async_to_sync(gateway.refresh)([AGENT])


def test_a_disabled_tool_is_not_listed_and_its_call_is_refused_as_unknown():
    tools = _own_registry()
    tools.apply_settings({"unlock_door": ToolSettings(enabled=False)})

    async def scenario():
        peer = Peer(tools=tools)
        await peer.initialize()
        listed = await peer.request("tools/list", {}, id=2)
        called = await peer.request("tools/call", {"name": "unlock_door", "arguments": {}}, id=3)
        return listed, called

    listed, called = async_to_sync(scenario)()
    assert [t["name"] for t in listed["result"]["tools"]] == ["lamp_level"]
    assert called["error"]["code"] == jsonrpc.INVALID_PARAMS and "unlock_door" in called["error"]["message"]
    with pytest.raises(ToolNotFound):  # every door's pipeline, not only sessions
        async_to_sync(call_tool)("unlock_door", {}, ToolContext(caller=Caller("x", "rest")), tools=tools)
    assert [t.name for t in tools.all_tools()] == ["lamp_level", "unlock_door"]  # the catalogue's view


def test_the_description_override_shows_and_the_confirmation_mark_is_set():
    tools = _own_registry()
    tools.apply_settings(
        {
            "lamp_level": ToolSettings(description="The living-room lamp's level, 0 to 5"),
            "unlock_door": ToolSettings(needs_confirmation=True),
        }
    )
    lamp, door = tools.list_tools()
    assert lamp.definition()["description"] == "The living-room lamp's level, 0 to 5"
    assert not lamp.needs_confirmation
    assert door.needs_confirmation and door.description == "Unlocks the front door"
    assert tools.get("unlock_door").needs_confirmation
    assert tools.get("unlock_door") is door  # built once per settings, not per tools/list
    tools.apply_settings({})
    assert not tools.get("unlock_door").needs_confirmation


def test_tools_know_their_source():
    assert registry.get("set_light_state").source == "devices.home"
    assert registry.get("list_agents").source == "devices.agents"


def test_settings_are_loaded_from_the_catalogue_and_changes_heard(db):
    heard = []
    registry.subscribe(lambda logs: heard.append(1))
    try:
        ToolSetting.objects.create(name="get_presence", enabled=False)
        ToolSetting.objects.create(name="set_alarm_state", description="Arms the alarm")
        ToolSetting.objects.create(name="get_all_states")  # nothing of its own: not loaded
        assert catalogue.reload() and heard == [1]
        assert not catalogue.reload() and heard == [1]  # nothing new: sessions not told again
    finally:
        registry._listeners.clear()
    assert set(registry.settings()) == {"get_presence", "set_alarm_state"}
    assert registry.get("get_presence") is None
    assert "get_presence" not in {t.name for t in registry.list_tools()}
    assert registry.get("set_alarm_state").description == "Arms the alarm"


def test_a_device_tool_is_catalogued_with_its_source_and_can_be_disabled(device, staff_client):
    assert DEVICE_TOOL in staff_client.get("/devices/").content.decode()
    offered = catalogue.record_offered_tools()
    row = ToolSetting.objects.get(name=device)
    assert device in offered and "set_light_state" in offered
    assert (row.source, row.scope, row.own_description) == (
        f"device {AGENT} (Kitchen)",
        "devices",
        f"Sets the volume (tool '{DEVICE_TOOL}' of device 'Kitchen')",
    )
    assert ToolSetting.objects.get(name="set_light_state").source == "devices.home"

    row.enabled = False
    row.save()
    catalogue.reload()
    assert registry.get(device) is None
    with pytest.raises(UnknownDeviceTool):  # by the device's own name too (call_agent_tool)
        async_to_sync(gateway.call)(AGENT, DEVICE_TOOL, {}, Caller("x", "rest"))
    listed = registry.get("list_agents").handler(Nothing(), ToolContext(caller=Caller("x", "rest")))
    assert listed["agents"][0]["tools"] == []
    assert staff_client.get(f"/api/agents/{AGENT}/tools").json() == []  # REST
    assert DEVICE_TOOL not in staff_client.get("/devices/").content.decode()  # no form for it


def test_the_admin_lists_own_and_device_tools_and_an_edit_is_audited_and_applied(
    device, staff_client, django_capture_on_commit_callbacks
):
    page = staff_client.get("/admin/mcp_endpoint/toolsetting/")
    assert page.status_code == 200
    text = page.content.decode()
    assert "set_light_state" in text and device in text
    assert f"device {AGENT} (Kitchen)" in text and "(devices.home)" in text

    row = ToolSetting.objects.get(name="set_light_state")
    with django_capture_on_commit_callbacks(execute=True):
        saved = staff_client.post(
            f"/admin/mcp_endpoint/toolsetting/{row.pk}/change/",
            {"description": "Switches a light", "needs_confirmation": "on"},  # enabled: unticked
        )
    assert saved.status_code == 302
    assert registry.get("set_light_state") is None
    assert not registry.settings()["set_light_state"].enabled
    event = Event.objects.get(action="toolsetting.edit")
    assert (event.actor, event.interface, event.target) == ("boss", "admin", "tool:set_light_state")
    assert event.after == {"enabled": False, "description": "Switches a light", "needs_confirmation": True}
    row.refresh_from_db()
    assert row.updated_by == "boss" and row.updated_at is not None
    disabled = staff_client.get("/admin/mcp_endpoint/toolsetting/?enabled__exact=0").content.decode()
    assert "set_light_state" in disabled and "get_presence" not in disabled

    chosen = ToolSetting.objects.filter(name__in=["set_light_state", "get_presence", device])
    with django_capture_on_commit_callbacks(execute=True):
        staff_client.post(
            "/admin/mcp_endpoint/toolsetting/",
            {"action": "disable", "_selected_action": [row.pk for row in chosen], "index": 0},
        )
    assert registry.get("get_presence") is None and registry.get(device) is None
    assert Event.objects.filter(action="toolsetting.edit").count() == 3  # the two it changed, and the edit
    with django_capture_on_commit_callbacks(execute=True):
        staff_client.post(
            "/admin/mcp_endpoint/toolsetting/",
            {"action": "enable", "_selected_action": [row.pk for row in chosen], "index": 0},
        )
    assert registry.get("get_presence") is not None and registry.get(device) is not None
    assert registry.get("set_light_state").needs_confirmation  # the rest of its settings stay


def test_the_owner_marks_a_tool_whose_clients_confirmation_is_enough(
    db, staff_client, django_capture_on_commit_callbacks
):
    staff_client.get("/admin/mcp_endpoint/toolsetting/")  # the rows are made
    row = ToolSetting.objects.get(name="set_alarm_state")
    form = staff_client.get(f"/admin/mcp_endpoint/toolsetting/{row.pk}/change/").content.decode()
    assert 'name="client_confirms"' in form and "confirmation is enough" in form.lower()
    with django_capture_on_commit_callbacks(execute=True):
        saved = staff_client.post(
            f"/admin/mcp_endpoint/toolsetting/{row.pk}/change/",
            {"enabled": "on", "client_confirms": "on"},
        )
    assert saved.status_code == 302
    assert registry.get("set_alarm_state").client_confirms  # applied through the registry
    assert not registry.get("set_light_state").client_confirms
    event = Event.objects.get(action="toolsetting.edit")
    assert (event.actor, event.target) == ("boss", "tool:set_alarm_state")
    assert event.after == {"client_confirms": True}
