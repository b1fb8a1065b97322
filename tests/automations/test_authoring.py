"""Writing automations: every bad reference named at once, nothing saved; every version kept
and restorable; a definition changed by a token disables it until an owner enables it again;
the reads the dashboard and the tools show."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from audit.models import Event
from automations import authoring
from automations.automation_selectors import automation_detail, automation_list, automation_runs
from automations.errors import AutomationError, AutomationNotFound, DefinitionError
from automations.models import Automation, AutomationRun, Room, ZoneRoom
from automations.services import save_scene
from automations.validation import validate
from common import roles
from devices.agents.models import Agent
from devices.telemetry.models import Sensor

pytestmark = pytest.mark.django_db

NAME = "Salon at night"
SIMPLE: dict[str, Any] = {
    "name": NAME,
    "triggers": [{"type": "time", "cron": "0 22 * * *"}],
    "actions": [{"tool": "set_light_state", "arguments": {"name": "salon", "on": True}}],
}


@pytest.fixture
def owner(django_user_model):
    user = django_user_model.objects.create_user("ana-owner", password="pw-for-tests-only")
    roles.assign(user, roles.OWNER)
    return user


@pytest.fixture
def member(django_user_model):
    user = django_user_model.objects.create_user("memo", password="pw-for-tests-only")
    roles.assign(user, roles.MEMBER)
    return user


def problems(data, **kwargs) -> list[str]:
    with pytest.raises(DefinitionError) as caught:
        validate(data, **kwargs)
    return caught.value.errors


def test_every_bad_reference_is_named_by_its_field_at_once(home, settings):
    settings.HOMEHUB_LOCATION = ""
    Sensor.objects.create(
        zone="living", device_type="t", device_id="1", channel="temp", value=20, measured_at=timezone.now()
    )
    data = {
        "name": "Everything wrong",
        "triggers": [
            {"type": "light", "name": "sotano", "to": "on"},
            {"type": "presence", "person": "Nadie", "to": "home"},
            {"type": "sensor", "zone": "attic", "channel": "temp", "above": 30},
            {"type": "sensor", "zone": "living", "channel": "co2", "above": 900},
            {"type": "agent", "agent": "ghost", "to": "online"},
            {"type": "time", "cron": "61 * * * *"},
            {"type": "sun", "event": "sunset"},
        ],
        "conditions": [{"type": "light", "name": "atico", "is": "off"}, {"type": "sun", "is": "down"}],
        "actions": [
            {"tool": "set_light_state", "arguments": {"name": "sotano", "on": True}},
            {"tool": "set_light_state", "arguments": {"name": "salon", "on": "yes"}},
            {"tool": "no_such_tool"},
            {"scene": "missing"},
            {"notify": "hi"},
        ],
    }
    errors = problems(data)
    assert errors == [
        "triggers[0].name: no light named 'sotano'",
        "triggers[1].person: no person named 'Nadie'",
        "triggers[2].zone: no sensor zone named 'attic'",
        "triggers[3].channel: zone 'living' has no sensor channel 'co2'",
        "triggers[4].agent: no agent named 'ghost'",
        errors[5],
        errors[6],
        "conditions[0].name: no light named 'atico'",
        errors[8],
        "actions[0].arguments.name: no light named 'sotano'",
        errors[10],
        "actions[2].tool: no tool named 'no_such_tool'",
        "actions[3].scene: no scene named 'missing'",
    ]
    assert errors[5].startswith("triggers[5].cron: '61 * * * *' does not parse")
    assert errors[6].startswith("triggers[6].type: a sun trigger needs the home's location")
    assert errors[8].startswith("conditions[1].type: a sun trigger needs the home's location")
    assert errors[10].startswith("actions[1].arguments.on: 'yes' is not of type 'boolean'")


def test_what_exists_passes_and_a_mapped_zone_without_readings_is_known(home, settings):
    settings.HOMEHUB_LOCATION = "40.4,-3.7"
    ZoneRoom.objects.create(zone="garden", room=Room.objects.create(name="G"))
    Agent.objects.create(agent_id="esp-1", name="ESP", approved=True)
    save_scene("all_off", {"salon": False}, actor="ana", interface="rest")
    definition = validate(
        {
            "name": "Fine",
            "triggers": [
                {"type": "sun", "event": "sunset", "offset_minutes": -15},
                {"type": "agent", "agent": "esp-1", "to": "offline"},
                {"type": "presence", "person": "Ana", "to": "away"},
            ],
            "conditions": [{"type": "time", "after": "18:00"}],
            "actions": [{"scene": "all_off"}, {"tool": "set_alarm_state", "arguments": {"armed": True}}],
        }
    )
    assert definition.name == "Fine"
    assert problems(
        {
            "name": "Garden",
            "triggers": [{"type": "sensor", "zone": "garden", "channel": "soil", "below": 10}],
            "actions": [{"notify": "water"}],
        }
    ) == ["triggers[0].channel: zone 'garden' has no sensor channel 'soil'"]


def test_a_tool_outside_the_authors_scopes_is_refused(home):
    assert problems(SIMPLE, scopes=frozenset({"read", "automations"})) == [
        "actions[0].tool: 'set_light_state' needs the 'control' scope, which you lack"
    ]
    assert validate(SIMPLE, scopes=frozenset({"control"})).name == NAME


def test_the_shape_is_checked_first_naming_its_field(home):
    assert problems(
        {"name": "x", "triggers": [{"type": "light", "name": "salon", "to": "dim"}], "actions": []}
    )[0] == ("triggers[0].to: Input should be 'on' or 'off'")


def test_save_keeps_every_version_and_restore_saves_an_old_one_again(home, owner):
    row = authoring.save_automation(SIMPLE, actor="ana", interface="dashboard", user=owner, enable=True)
    assert (row.version, row.enabled, row.enabled_by) == (1, True, owner)
    changed = {**SIMPLE, "description": "later", "triggers": [{"type": "time", "cron": "30 23 * * *"}]}
    row = authoring.save_automation(changed, actor="ana", interface="dashboard", user=owner)
    assert (row.version, row.enabled) == (2, True)  # an owner's change stays enabled
    again = authoring.save_automation(changed, actor="ana", interface="dashboard", user=owner)
    assert again.version == 2  # the same definition is no new version
    restored = authoring.restore_version(NAME, 1, actor="ana", interface="dashboard", user=owner)
    assert restored.version == 3 and restored.definition["triggers"] == [
        {"type": "time", "cron": "0 22 * * *"}
    ]
    detail = automation_detail(NAME)
    assert detail is not None
    assert [v["number"] for v in detail["versions"]] == [3, 2, 1]
    assert detail["versions"][1]["definition"]["description"] == "later"
    assert Event.objects.filter(action="automation.save", target=f"automation:{NAME}").count() == 4
    with pytest.raises(AutomationError, match="no version 9"):
        authoring.restore_version(NAME, 9, actor="ana", interface="dashboard")
    with pytest.raises(AutomationNotFound):
        authoring.restore_version("nope", 1, actor="ana", interface="dashboard")


def test_a_bad_definition_saves_nothing(home):
    with pytest.raises(DefinitionError):
        authoring.save_automation({**SIMPLE, "actions": [{"scene": "nope"}]}, actor="t", interface="mcp-http")
    assert not Automation.objects.exists() and not Event.objects.filter(action="automation.save").exists()


def test_a_tokens_change_disables_until_an_owner_enables_again(home, owner, member):
    authoring.save_automation(SIMPLE, actor="ana", interface="dashboard", user=owner, enable=True)
    row = authoring.save_automation(
        {**SIMPLE, "description": "tweaked"},
        actor="token:bot",
        interface="mcp-http",
        scopes=frozenset({"control"}),
    )
    assert (row.version, row.enabled, row.enabled_by) == (2, False, None)
    with pytest.raises(AutomationError, match="Only an owner"):
        authoring.save_automation(SIMPLE, actor="bot", interface="mcp-http", enable=True)
    with pytest.raises(AutomationError, match="Only an owner"):
        authoring.set_enabled(NAME, True, user=member, actor="memo", interface="dashboard")
    with pytest.raises(AutomationError, match="at version 2 now, not 1"):
        authoring.set_enabled(NAME, True, user=owner, actor="ana", interface="dashboard", version=1)
    row = authoring.set_enabled(NAME, True, user=owner, actor="ana", interface="dashboard", version=2)
    assert (row.enabled, row.enabled_by) == (True, owner)
    assert Event.objects.filter(action="automation.enable", actor="ana").exists()
    row = authoring.set_enabled(NAME, False, user=owner, actor="ana", interface="dashboard")
    assert not row.enabled


def test_a_changed_definition_resets_the_engines_state(home, owner):
    authoring.save_automation(SIMPLE, actor="ana", interface="dashboard", user=owner)
    Automation.objects.filter(name=NAME).update(state={"armed": {"0": "x"}})
    row = authoring.save_automation(
        {**SIMPLE, "description": "new"}, actor="ana", interface="dashboard", user=owner
    )
    assert row.state == {}


def test_delete_removes_it_and_keeps_its_definition_in_the_audit(home):
    authoring.save_automation(SIMPLE, actor="ana", interface="rest")
    authoring.delete_automation(NAME, actor="ana", interface="rest")
    assert not Automation.objects.exists()
    deleted = Event.objects.get(action="automation.delete").before
    assert deleted is not None and deleted["definition"]["name"] == NAME
    with pytest.raises(AutomationNotFound):
        authoring.delete_automation(NAME, actor="ana", interface="rest")


def test_the_list_shows_last_run_and_next_scheduled_moment(home, owner):
    authoring.save_automation(SIMPLE, actor="ana", interface="dashboard", user=owner, enable=True)
    authoring.save_automation({**SIMPLE, "name": "Off"}, actor="ana", interface="dashboard")
    row = Automation.objects.get(name=NAME)
    started = timezone.now() - timedelta(hours=1)
    AutomationRun.objects.create(automation=row, started_at=started - timedelta(hours=1), status="done")
    AutomationRun.objects.create(automation=row, started_at=started, status="skipped", trace=[{"step": 1}])
    listed = {r["name"]: r for r in automation_list()}
    on = listed[NAME]
    assert on["enabled"] and on["enabled_by"] == "ana-owner" and on["version"] == 1
    assert on["last_run"] == {"started_at": started.isoformat(), "status": "skipped"}
    assert on["next_run"] is not None and on["next_run"] > timezone.now().isoformat()[:10]
    assert listed["Off"]["next_run"] is None and listed["Off"]["last_run"] is None
    runs = automation_runs(NAME, 1)
    assert [(r["status"], r["trace"]) for r in runs] == [("skipped", [{"step": 1}])]
    assert len(automation_runs(None, 50)) == 2
