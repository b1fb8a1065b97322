"""The Automations pages: everyone with a role reads them, only owners write (a 403 naming the
role otherwise, nothing changed); the list's switch enables with the owner's rights; the editor
names each problem beside its field and saves nothing; the JSON path; the dry run shows what it
would have done, saving nothing; restoring a version; a run's trace read as steps."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from audit.models import Event
from automations import authoring
from automations.models import Automation, AutomationRun, AutomationVersion
from devices.home import services as home_services
from tests.hub_support import create_account

pytestmark = pytest.mark.django_db

NAME = "Salon at night"
SIMPLE: dict[str, Any] = {
    "name": NAME,
    "triggers": [{"type": "time", "cron": "0 22 * * *"}],
    "actions": [{"tool": "set_light_state", "arguments": {"name": "salon", "on": True}}],
}
LIST, EDIT, ENABLE = "/automations/", "/automations/edit/", "/automations/enabled/"


def logged_in(client, role: str):
    user = create_account(role, "pw-for-tests-only", role)
    client.force_login(user)
    return user


def saved(data: dict[str, Any] = SIMPLE) -> Automation:
    return authoring.save_automation(data, actor="ana", interface="dashboard")


def form(**fields: Any) -> dict[str, Any]:
    """The editor's fields for a light trigger with one tool action, changed by `fields`."""
    return {
        "name": "Cocina follows salon",
        "trigger_type": "light",
        "trigger_light": "salon",
        "trigger_light_to": "on",
        "action_0_kind": "tool",
        "action_0_tool": "set_light_state",
        "action_0_arguments": '{"name": "cocina", "on": true}',
        "days": "7",
        **fields,
    }


def errors_in(html: str, fieldset: str) -> list[str]:
    """The problems shown inside the editor's fieldset `fieldset` (its id)."""
    found = re.search(rf'<fieldset id="{fieldset}">(.*?)</fieldset>', html, re.S)
    assert found, fieldset
    return re.findall(r"<li>(.*?)</li>", found.group(1))


@pytest.mark.parametrize("role", ["guest", "member", "owner"])
def test_everyone_with_a_role_reads_the_list_and_an_automation(client, home, role):
    saved()
    logged_in(client, role)
    listing = client.get(LIST).content.decode()
    page = client.get("/automations/automation/", {"name": NAME}).content.decode()
    assert f'data-automation-row="{NAME}"' in listing and "Version 1, disabled" in page
    assert 'href="/automations/"' in client.get("/").content.decode()  # in the navigation
    writes = ('data-automation-switch="', "New automation", ">Edit</a>")
    if role == "owner":
        assert all(w in listing + page for w in writes)
    else:
        assert not any(w in listing + page for w in writes)
        assert "needs the owner role" in listing


@pytest.mark.parametrize("role", ["guest", "member"])
def test_no_one_but_an_owner_writes_each_door_says_which_role(client, home, role):
    saved()
    logged_in(client, role)
    for url, data in [
        (EDIT, form()),
        (EDIT, {**form(), "dry_run": "1"}),
        (ENABLE, {"name": NAME, "enabled": "on"}),
        ("/automations/restore/", {"name": NAME, "number": "1"}),
        ("/automations/delete/", {"name": NAME}),
    ]:
        response = client.post(url, data)
        assert response.status_code == 403 and "This needs the owner role" in response.content.decode(), url
    assert client.get(EDIT).status_code == 403
    assert list(Automation.objects.values_list("name", "enabled", "version")) == [(NAME, False, 1)]


def test_anonymous_visitors_are_sent_to_log_in(client, home):
    assert client.get(LIST)["Location"].startswith("/login/")


def test_the_switch_enables_with_the_owners_rights_and_disables(client, home):
    saved()
    owner = logged_in(client, "owner")
    response = client.post(ENABLE, {"name": NAME, "enabled": "on", "version": "1"}, follow=True)
    assert f"Automation &#x27;{NAME}&#x27; enabled." in response.content.decode()
    row = Automation.objects.get()
    assert row.enabled and row.enabled_by == owner
    assert 'aria-checked="true"' in response.content.decode() and "by owner" in response.content.decode()
    assert re.search(r"data-iso=\"[^\"]+T22:00", response.content.decode())  # the next run, at 22:00

    client.post(ENABLE, {"name": NAME, "enabled": "off", "version": "1"})
    assert not Automation.objects.get().enabled
    assert list(
        Event.objects.filter(action__startswith="automation.e").values_list("action", "interface")
    ) == [("automation.enable", "dashboard")]


def test_a_stale_switch_is_refused_rather_than_enabling_another_definition(client, home):
    saved()
    saved({**SIMPLE, "description": "changed since the page was shown"})
    logged_in(client, "owner")
    response = client.post(ENABLE, {"name": NAME, "enabled": "on", "version": "1"}, follow=True)
    assert "is at version 2 now, not 1" in response.content.decode()
    assert not Automation.objects.get().enabled


def test_the_form_saves_the_common_shape_and_enables_it(client, home):
    owner = logged_in(client, "owner")
    response = client.post(
        EDIT,
        form(
            condition_alarm="disarmed",
            condition_after="18:00",
            condition_weekdays=["sat", "sun"],
            action_1_kind="notify",
            action_1_notify="Cocina on",
            action_1_level="warning",
            enable="on",
        ),
    )
    assert response.status_code == 302 and response["Location"].startswith("/automations/automation/?name=")
    row = Automation.objects.get()
    assert row.enabled and row.enabled_by == owner
    assert row.definition["triggers"] == [{"type": "light", "name": "salon", "to": "on"}]
    assert row.definition["conditions"] == [
        {"type": "alarm", "armed": False},
        {"type": "time", "after": "18:00", "weekdays": ["sat", "sun"]},
    ]
    assert row.definition["actions"] == [
        {"tool": "set_light_state", "arguments": {"name": "cocina", "on": True}},
        {"notify": "Cocina on", "level": "warning"},
    ]
    # editing shows it back in the fields, not as JSON
    html = client.get(EDIT, {"name": row.name}).content.decode()
    assert 'value="salon"' in html and 'value="sat" checked' in html and 'value="Cocina on"' in html
    assert re.search(r'<textarea name="definition_json"[^>]*></textarea>', html)


def test_each_problem_is_named_beside_its_field_and_nothing_is_saved(client, home):
    logged_in(client, "owner")
    response = client.post(
        EDIT,
        form(
            trigger_light="porch",
            action_0_arguments='{"name": "cocina", "on": "yes"}',
            action_2_kind="scene",
            action_2_scene="Movie night",
        ),
    )
    html = response.content.decode()
    assert response.status_code == 400 and "Nothing was saved" in html
    assert errors_in(html, "trigger-fields") == ["triggers[0].name: no light named &#x27;porch&#x27;"]
    assert any(e.startswith("actions[0].arguments.on") for e in errors_in(html, "action-0"))
    # the third row is the definition's second action: its problem is shown beside the third row
    assert errors_in(html, "action-2") == ["actions[1].scene: no scene named &#x27;Movie night&#x27;"]
    assert errors_in(html, "action-1") == []
    assert 'value="porch"' in html  # the form comes back as it was sent

    # a shape that does not hold is named before what it refers to is looked up
    html = client.post(EDIT, form(name="", condition_after="25:00")).content.decode()
    assert any(e.startswith("conditions[0].after") for e in errors_in(html, "condition-fields"))
    assert re.search(r'id="a-name"[^>]*>\s*<ul class="field-errors" role="alert"><li>name: ', html)
    assert not Automation.objects.exists()


def test_arguments_that_are_not_json_are_named_and_nothing_is_checked_further(client, home):
    logged_in(client, "owner")
    html = client.post(EDIT, form(action_0_arguments="{name: cocina}")).content.decode()
    assert errors_in(html, "action-0")[0].startswith("actions[0].arguments: not JSON")
    assert not Automation.objects.exists()


def test_the_json_wins_over_the_fields_and_its_problems_are_shown_beside_it(client, home):
    logged_in(client, "owner")
    definition = (
        '{"name": "Two triggers", "mode": "restart", "triggers": [{"type": "alarm", "to": "armed"},'
        ' {"type": "light", "name": "garage", "to": "on"}], "actions": [{"delay_seconds": 5},'
        ' {"scene": "Nope"}]}'
    )
    html = client.post(EDIT, form(definition_json=definition)).content.decode()
    assert "actions[1].scene: no scene named &#x27;Nope&#x27;" in html
    for wrong, said in [("[1]", "definition: must be a JSON object"), ("{nope", "definition: not JSON")]:
        html = client.post(EDIT, form(definition_json=wrong)).content.decode()
        assert said in html and "{nope" not in html.split('id="a-json"')[0]
    assert not Automation.objects.exists()

    response = client.post(EDIT, form(definition_json=definition.replace(', {"scene": "Nope"}', "")))
    assert response.status_code == 302
    row = Automation.objects.get()
    assert row.name == "Two triggers" and row.definition["mode"] == "restart" and not row.enabled
    # a definition the fields cannot show is edited as JSON
    html = client.get(EDIT, {"name": "Two triggers"}).content.decode()
    assert "&quot;delay_seconds&quot;: 5" in html and '<details id="json-editor" open>' in html


def test_the_dry_run_shows_when_it_would_have_fired_and_saves_nothing(client, home):
    for hours, on in [(30, True), (29, False), (5, True)]:
        home_services.set_light_state("salon", on, actor="ana", interface="dashboard")
        Event.objects.filter(pk=Event.objects.latest("id").pk).update(
            at=timezone.now() - timedelta(hours=hours)
        )
    logged_in(client, "owner")
    html = client.post(EDIT, {**form(condition_alarm="armed"), "dry_run": "1"}).content.decode()
    assert "Dry run: 2 firings" in html
    assert html.count("conditions not met") == 2 and "does not hold</span> disarmed" in html
    html = client.post(EDIT, {**form(), "dry_run": "1", "days": "1"}).content.decode()
    assert "Dry run: 1 firing" in html and "would run" in html
    assert "would call <code>set_light_state</code> <code>{&quot;name&quot;: &quot;cocina&quot;" in html
    assert not Automation.objects.exists()
    html = client.post(EDIT, {**form(), "dry_run": "1", "days": "90"}).content.decode()
    assert "days: must be 1 to 31" in html


def test_restoring_a_version_saves_it_again_as_the_newest(client, home):
    saved()
    saved({**SIMPLE, "triggers": [{"type": "time", "cron": "0 23 * * *"}]})
    logged_in(client, "owner")
    page = client.get("/automations/automation/", {"name": NAME}).content.decode()
    assert 'data-version="2"' in page and 'Restore<span class="sr-only"> version 1</span>' in page
    response = client.post("/automations/restore/", {"name": NAME, "number": "1"}, follow=True)
    assert "Version 1 of &#x27;Salon at night&#x27; restored as version 3." in response.content.decode()
    assert Automation.objects.get().definition["triggers"][0]["cron"] == "0 22 * * *"
    assert AutomationVersion.objects.count() == 3


def test_a_runs_trace_reads_as_trigger_conditions_and_actions(client, home):
    row = saved({**SIMPLE, "conditions": [{"type": "alarm", "armed": False}]})
    AutomationRun.objects.create(
        automation=row,
        version=1,
        status=AutomationRun.Status.FAILED,
        started_at=timezone.now(),
        trigger={"type": "time"},
        trace=[
            {"trigger": {"type": "time", "at": "2026-11-27T22:00:00"}},
            {"condition": {"type": "alarm", "armed": False}, "ok": True, "why": "disarmed"},
            {"action": 'call set_light_state {"name": "salon", "on": true}', "ok": False, "error": "refused"},
        ],
    )
    logged_in(client, "member")
    html = client.get("/automations/automation/", {"name": NAME}).content.decode()
    steps = re.findall(r'<li data-step="(\w+)">(.*?)</li>', html, re.S)
    assert [kind for kind, _ in steps] == ["trigger", "condition", "action"]
    assert "ok" in steps[1][1] and "disarmed" in steps[1][1]
    assert "failed" in steps[2][1] and "refused" in steps[2][1]
    assert "failed</span>" in client.get(LIST).content.decode()  # the last run on the list


def test_delete_asks_the_service_and_an_unknown_name_is_a_404(client, home):
    saved()
    logged_in(client, "owner")
    client.post("/automations/delete/", {"name": NAME})
    assert not Automation.objects.exists()
    assert client.get("/automations/automation/", {"name": NAME}).status_code == 404
    assert client.get(EDIT, {"name": NAME}).status_code == 404
