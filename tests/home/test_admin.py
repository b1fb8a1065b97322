"""The Django admin: pages for staff, actions through the audited services, nothing for anonymous users."""

import pytest

from audit.models import Event
from devices.home.models import Alarm, Light, Person

pytestmark = pytest.mark.django_db

PAGES = [
    "/admin/",
    "/admin/home/light/",
    "/admin/home/alarm/",
    "/admin/home/person/",
    "/admin/agents/agent/",
    "/admin/agents/agenttool/",
    "/admin/telemetry/telemetryreading/",
    "/admin/telemetry/sensor/",
    "/admin/telemetry/rejectedmessage/",
    "/admin/mqtt/mqttworker/",
    "/admin/audit/event/",
]


@pytest.mark.parametrize("url", PAGES)
def test_staff_sees_admin_pages(home, staff_client, url):
    assert staff_client.get(url).status_code == 200


@pytest.mark.parametrize("url", PAGES)
def test_anonymous_is_sent_to_login(home, client, url):
    response = client.get(url)
    assert response.status_code == 302
    assert "/admin/login/" in response["Location"]


def test_light_action_goes_through_services_and_is_audited(home, staff_client):
    ids = list(Light.objects.filter(name__in=["salon", "cocina"]).values_list("pk", flat=True))
    response = staff_client.post(
        "/admin/home/light/", {"action": "turn_on", "_selected_action": ids}, follow=True
    )
    assert response.status_code == 200
    assert set(Light.objects.filter(on=True).values_list("name", flat=True)) == {"salon", "cocina"}
    events = Event.objects.filter(interface="admin", action="light.set")
    assert sorted(events.values_list("target", flat=True)) == ["light:cocina", "light:salon"]
    assert set(events.values_list("actor", flat=True)) == {"boss"}


def test_alarm_and_presence_actions(home, staff_client):
    alarm = Alarm.objects.get()
    staff_client.post("/admin/home/alarm/", {"action": "arm", "_selected_action": [alarm.pk]})
    assert Alarm.objects.get().armed is True
    carlos = Person.objects.get(name="Carlos")
    staff_client.post("/admin/home/person/", {"action": "mark_home", "_selected_action": [carlos.pk]})
    assert Person.objects.get(name="Carlos").present is True
    assert Event.objects.filter(interface="admin", target="person:Carlos").exists()


def test_anonymous_action_changes_nothing(home, client):
    ids = list(Light.objects.values_list("pk", flat=True))
    client.post("/admin/home/light/", {"action": "turn_on", "_selected_action": ids})
    assert not Light.objects.filter(on=True).exists()


def test_audit_trail_is_read_only(home, staff_client):
    from devices.home.services import set_light_state

    set_light_state("salon", True, actor="x", interface="rest")
    event = Event.objects.first()
    assert staff_client.get("/admin/audit/event/add/").status_code == 403
    assert staff_client.post(f"/admin/audit/event/{event.pk}/delete/", {"post": "yes"}).status_code == 403
    assert Event.objects.filter(pk=event.pk).exists()


def test_admin_add_edit_and_delete_are_audited(home, staff_client):
    added = staff_client.post(
        "/admin/home/light/add/", {"name": "patio", "label": "Patio", "room": "Fuera"}, follow=True
    )
    assert added.status_code == 200 and Light.objects.filter(name="patio").exists()
    patio = Light.objects.get(name="patio")
    staff_client.post(
        f"/admin/home/light/{patio.pk}/change/", {"label": "Patio trasero", "room": "Fuera"}, follow=True
    )
    ana = Person.objects.get(name="Ana")
    staff_client.post(f"/admin/home/person/{ana.pk}/delete/", {"post": "yes"}, follow=True)
    no_tools = {"tools-TOTAL_FORMS": "0", "tools-INITIAL_FORMS": "0"}  # the (read-only) tools inline
    agent = {"agent_id": "aa:00", "transport": "mqtt", "call_timeout": "5", **no_tools}
    staff_client.post("/admin/agents/agent/add/", agent)
    events = {
        e.action: e
        for e in Event.objects.filter(interface="admin", actor="boss").order_by("id")
        if e.action.endswith((".create", ".edit", ".delete"))
    }
    assert set(events) == {"light.create", "light.edit", "person.delete", "agent.create"}
    assert events["light.create"].target == "light:patio"
    assert events["light.create"].after == {"name": "patio", "label": "Patio", "room": "Fuera"}
    assert (events["light.edit"].before, events["light.edit"].after) == (
        {"label": "Patio"},
        {"label": "Patio trasero"},
    )
    assert events["person.delete"].target == "person:Ana"
    assert events["agent.create"].target == "agent:aa:00"
    assert not Person.objects.filter(name="Ana").exists()
