"""Requests and Activity in plain sentences (issue #28): a request reads "Claude (through /mcp)
asks to disarm the alarm", an event "boss switched the Salón light on from the dashboard", and
the Activity is searched by the names a household uses ("Salón", "salon", "SALON")."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from audit.models import Event
from dashboard.sentences import action_phrase, event_sentence, request_sentence
from devices.home import services as home_services
from mcp_endpoint.controls import confirmation
from mcp_endpoint.models import PendingConfirmation

LABELS = {"salon": "Salón"}


def test_requests_of_the_known_hub_tools_read_as_sentences():
    assert request_sentence("Claude", "mcp-http", "set_alarm_state", {"armed": False}) == (
        "Claude (through /mcp) asks to disarm the alarm"
    )
    assert action_phrase("set_alarm_state", {"armed": True}) == "arm the alarm"
    assert (
        action_phrase("set_light_state", {"name": "salon", "on": False}, light_labels=LABELS)
        == "switch the Salón light off"
    )
    assert (
        action_phrase("automation_set_enabled", {"name": "Noche", "enabled": True, "version": 3})
        == "enable the automation 'Noche' (version 3)"
    )
    assert (
        action_phrase("door__self_door_open", {"note": "x"}, title="Open the door")
        == "run Open the door on door"
    )
    assert (
        action_phrase("fel_render", {"xml_path": "a.xml"}, title="Render")
        == "run Render with xml_path: a.xml"
    )
    assert request_sentence("ana", "rest", "get_all_states", {}) == (
        "ana (through the REST API) asks to run get_all_states"
    )


@pytest.mark.django_db
def test_events_read_as_sentences():
    def sentence(**fields) -> str:
        return event_sentence(Event(**fields), LABELS)

    light = sentence(
        actor="ana", interface="dashboard", action="light.set", target="light:salon", after={"on": True}
    )
    assert light == "ana switched the Salón light on from the dashboard"
    call = sentence(
        actor="Claude",
        interface="mcp-http",
        action="tool.call",
        target="tool:get_all_states",
        after={"ok": True, "ms": 1.4},
    )
    assert call == "Claude called get_all_states through /mcp"
    refused = sentence(
        actor="Claude",
        interface="mcp-http",
        action="tool.call",
        target="tool:set_alarm_state",
        after={"ok": False, "ms": 3.0, "confirmation": "denied by maria"},
    )
    assert refused == "Claude called set_alarm_state through /mcp, which failed (denied by maria)"
    alarm = sentence(
        actor="Noche", interface="automation", action="alarm.set", target="alarm", after={"armed": True}
    )
    assert alarm == "The automation 'Noche' armed the alarm"
    batch = sentence(
        actor="boss",
        interface="dashboard",
        action="fel.batch",
        target="batch:7",
        after={"state": "done", "count": 240, "invalid": 0},
    )
    assert batch == "boss processed a batch of 240 invoices from the dashboard"
    odd = sentence(actor="", interface="system", action="thing.odd", target="x:y")
    assert odd == "The hub did thing.odd on x:y"


@pytest.mark.django_db
def test_the_activity_page_shows_sentences_and_before_after_and_finds_a_light_by_its_name(home, staff_client):
    # seed 000's home: the light labelled "Salón" is light:salon
    home_services.set_light_state("salon", True, actor="ana", interface="dashboard")
    home_services.set_light_state("cocina", True, actor="ana", interface="dashboard")
    page = staff_client.get("/activity/").content.decode()
    assert "ana switched the Salón light on from the dashboard" in page
    assert 'class="change"' in page and "on: no" in page and "on: yes" in page  # before -> after
    for query in ("Salón", "salon", "SALÓN", "salón"):
        found = staff_client.get("/activity/", {"target": query}).content.decode()
        assert "the Salón light on" in found, query
        assert "the Cocina light on" not in found, query
    nothing = staff_client.get("/activity/", {"target": "Garaje"}).content.decode()
    assert "Nothing matches these filters." in nothing


@pytest.mark.django_db
def test_the_requests_pages_write_a_request_as_a_sentence_with_approve_primary(staff_client):
    arguments = {"armed": False}
    row = PendingConfirmation.objects.create(
        tool="set_alarm_state",
        summary="",
        arguments=arguments,
        arguments_hash=confirmation.arguments_hash(arguments),
        actor="Claude",
        interface="mcp-http",
        expires_at=timezone.now() + timedelta(seconds=60),
    )
    for url in ("/requests/", f"/requests/{row.pk}/"):
        page = staff_client.get(url).content.decode()
        assert "Claude (through /mcp) asks to disarm the alarm" in page, url
        assert "&quot;armed&quot;: false" in page, url  # the exact arguments stay visible
        assert 'class="btn btn-primary" type="submit" name="decision" value="approve"' in page, url
        assert 'class="btn btn-quiet" type="submit" name="decision" value="deny"' in page, url
    home_page = staff_client.get("/").content.decode()
    assert '<span class="nav-count" id="requests-count">1</span>' in home_page
    PendingConfirmation.objects.update(decision="denied")
    assert '<span class="nav-count" id="requests-count"></span>' in staff_client.get("/").content.decode()
