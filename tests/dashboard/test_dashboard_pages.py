"""The dashboard's pages with Django's test client: login, every page, every form."""

from datetime import timedelta

import pytest
from django.utils import timezone

from audit.models import Event
from devices.agents.models import Agent, AgentTool
from devices.home import services
from devices.home.models import Light, Person
from devices.telemetry.models import TelemetryReading
from tests.telemetry_support import store_readings

pytestmark = pytest.mark.django_db

PAGES = ["/", "/sensors/", "/devices/", "/invoices/", "/activity/"]


@pytest.fixture
def readings(db):
    now = timezone.now()
    rows = [
        TelemetryReading(
            zone="salon",
            device_type="sensor",
            device_id="esp1",
            channel="temperature",
            value=20 + i / 10,
            unit="°C",
            measured_at=now - timedelta(minutes=5 * i),
        )
        for i in range(40)
    ]
    rows.append(
        TelemetryReading(
            zone="cocina",
            device_type="sensor",
            device_id="esp2",
            channel="humidity",
            value=55,
            unit="%",
            measured_at=now,
        )
    )
    store_readings(rows)


@pytest.fixture
def agent(db):
    agent = Agent.objects.create(
        agent_id="aa:bb:cc", name="Kitchen speaker", online=True, approved=True, last_seen=timezone.now()
    )
    AgentTool.objects.create(
        agent=agent,
        name="self.audio_speaker.set_volume",
        description="Set the volume",
        input_schema={
            "type": "object",
            "properties": {"volume": {"type": "integer", "minimum": 0, "maximum": 100}},
            "required": ["volume"],
        },
    )
    return agent


@pytest.mark.parametrize("url", PAGES)
def test_every_page_needs_login(client, url):
    response = client.get(url)
    assert response.status_code == 302
    assert response["Location"].startswith("/login/?next=")


def test_login_page_and_login(client, django_user_model, home):
    django_user_model.objects.create_user("ana", password="a-long-password-1")
    page = client.get("/login/")
    assert page.status_code == 200
    assert b"csrfmiddlewaretoken" in page.content
    response = client.post("/login/", {"username": "ana", "password": "a-long-password-1"})
    assert response.status_code == 302 and response["Location"] == "/"
    assert client.get("/").status_code == 200
    bad = client.post("/login/", {"username": "ana", "password": "wrong"})
    assert b"didn&#x27;t match" in bad.content or b"didn't match" in bad.content


def test_login_enforces_csrf(django_user_model):
    from django.test import Client

    django_user_model.objects.create_user("ana", password="a-long-password-1")
    strict = Client(enforce_csrf_checks=True)
    assert strict.post("/login/", {"username": "ana", "password": "a-long-password-1"}).status_code == 403


@pytest.mark.parametrize("url", PAGES)
def test_pages_render(staff_client, home, readings, agent, url):
    response = staff_client.get(url)
    assert response.status_code == 200
    assert b"<main" in response.content


def test_home_shows_lights_by_room_alarm_people_sensors_agents(staff_client, home, readings, agent):
    html = staff_client.get("/").content.decode()
    for label in ["Salón", "Cocina", "Dormitorio", "Baño", "Garage"]:
        assert f'data-room="{label}"' in html  # one card per room
    assert 'data-alarm="disarmed"' in html
    assert 'data-person="Carlos"' in html
    assert "Kitchen speaker" in html
    assert "Salon temperature" in html  # named from its zone (in no room) and channel, not its device
    assert '20<span class="tile-unit"> °C</span>' in html  # 20.0 rounded, its unit beside it
    assert "Cocina humidity" in html and '55<span class="tile-unit"> %</span>' in html
    assert "just now" in html


def test_switch_light_is_audited_as_dashboard(staff_client, home):
    response = staff_client.post("/lights/salon/", {"on": "1"})
    assert response.status_code == 302
    assert Light.objects.get(name="salon").on is True
    event = Event.objects.filter(action="light.set").first()
    assert (event.interface, event.actor, event.target) == ("dashboard", "boss", "light:salon")
    answer = staff_client.post("/lights/salon/", {"on": "0"}, HTTP_ACCEPT="application/json")
    assert answer.json() == {"name": "salon", "on": False}
    assert staff_client.post("/lights/nope/", {"on": "1"}, HTTP_ACCEPT="application/json").status_code == 404
    assert staff_client.get("/lights/salon/").status_code == 405


def test_disarming_needs_confirmation(staff_client, home):
    services.set_alarm_state(True, actor="t", interface="system")
    response = staff_client.post("/alarm/", {"armed": "0"})
    assert response.status_code == 302 and response["Location"] == "/alarm/"
    assert "Yes, disarm" in staff_client.get("/alarm/").content.decode()  # the confirmation page
    assert Event.objects.filter(interface="dashboard").count() == 0
    staff_client.post("/alarm/", {"armed": "0", "confirm": "yes"})
    assert Event.objects.get(interface="dashboard").after == {"armed": False}
    nothing_to_do = staff_client.get("/alarm/").content.decode()
    assert "already <strong>disarmed</strong>" in nothing_to_do and "Yes, disarm" not in nothing_to_do
    assert staff_client.post("/alarm/", {"armed": "1"}, HTTP_ACCEPT="application/json").json() == {
        "armed": True
    }


def test_presence(staff_client, home):
    staff_client.post("/people/Ana/", {"present": "1"})
    assert Person.objects.get(name="Ana").present is True
    assert staff_client.post("/people/Nadie/", {"present": "1"}).status_code == 404


def test_sensor_detail_chart_ranges(staff_client, readings):
    url = "/sensors/salon/sensor/esp1/temperature/"
    for range_name in ["hour", "day", "week", "bogus"]:
        response = staff_client.get(url, {"range": range_name})
        assert response.status_code == 200
        html = response.content.decode()
        assert "<svg" in html and "<polyline" in html
    hour = staff_client.get(url, {"range": "hour"}).content.decode()
    assert "12 readings" in hour  # 0, 5, ... 55 minutes ago
    assert staff_client.get("/sensors/x/y/z/w/").status_code == 404


def test_sensor_chart_with_no_recent_readings(staff_client, db):
    store_readings(
        [
            TelemetryReading(
                zone="z",
                device_type="t",
                device_id="d",
                channel="c",
                value=1,
                measured_at=timezone.now() - timedelta(days=30),
            )
        ]
    )
    html = staff_client.get("/sensors/z/t/d/c/", {"range": "hour"}).content.decode()
    assert "No readings in this range" in html


def test_devices_page_builds_a_form_from_the_schema(staff_client, agent):
    html = staff_client.get("/devices/").content.decode()
    assert 'name="arg-volume"' in html and 'type="number"' in html and 'max="100"' in html
    assert "WebSocket" in html


def test_devices_page_shows_the_mcp_endpoints_status_with_the_url_masked(staff_client):
    from mcp_endpoint.models import OutboundEndpoint

    secret = "eyJhbGciOiJFUzI1NiJ9.dashboard-secret"
    OutboundEndpoint.objects.create(
        name="kitchen speaker",
        url=f"wss://api.xiaozhi.me/mcp/?token={secret}",
        scopes=["read", "control"],
        tools=["set_light_state"],
        connected=True,
        connected_since=timezone.now(),
        held_until=timezone.now() + timedelta(seconds=30),
        calls=3,
    )
    OutboundEndpoint.objects.create(
        name="hall", url=f"wss://h/mcp/?token={secret}", last_error="could not connect: HTTP 401"
    )
    html = staff_client.get("/devices/").content.decode()
    assert "kitchen speaker" in html and "wss://api.xiaozhi.me/mcp/?token=…" in html and secret not in html
    assert "Connected since" in html and "3 calls" in html and "<code>set_light_state</code>" in html
    assert "Not connected" in html and "Last error: could not connect: HTTP 401" in html


def test_tool_call_validation_and_unknown_tool(staff_client, agent):
    bad = staff_client.post(
        "/devices/",
        {"agent_id": "aa:bb:cc", "tool": "self.audio_speaker.set_volume", "arg-volume": "loud"},
        HTTP_ACCEPT="application/json",
    )
    assert bad.status_code == 400 and bad.json()["fields"] == {"volume": "Enter a whole number."}
    missing = staff_client.post(
        "/devices/", {"agent_id": "aa:bb:cc", "tool": "nope"}, HTTP_ACCEPT="application/json"
    )
    assert missing.status_code == 404


def events_of(page) -> str:
    """The events table of an Activity page (not its filter form, which names every action)."""
    html = page if isinstance(page, str) else page.content.decode()
    return html.split('id="event-list"', 1)[1]


def test_activity_filters_and_pagination(staff_client, home):
    for i in range(30):
        services.set_light_state("salon", i % 2 == 0, actor="ana", interface="rest")
    services.set_alarm_state(True, actor="carlos", interface="mcp-http")
    first = staff_client.get("/activity/").content.decode()
    assert "Page 1 of" in first and first.index("alarm.set") < first.index("light.set")  # newest first
    assert staff_client.get("/activity/", {"page": 2}).status_code == 200
    only = events_of(staff_client.get("/activity/", {"interface": "mcp-http"}))
    assert "alarm.set" in only and "light.set" not in only
    by_actor = events_of(staff_client.get("/activity/", {"actor": "carl"}))
    assert "alarm.set" in by_actor and "light.set" not in by_actor
    by_target = events_of(staff_client.get("/activity/", {"target": "light:salon"}))
    assert "light.set" in by_target and "alarm.set" not in by_target
    assert "armed: yes" in events_of(first) and "{'armed'" not in first  # changes read as words
    by_action = staff_client.get("/activity/", {"action": "alarm.set"}).content.decode()
    assert "carlos" in events_of(by_action) and "light.set" not in events_of(by_action)
    assert '<option value="alarm.set" selected>' in by_action  # the filter shows what is applied
    paged = staff_client.get("/activity/", {"action": "light.set", "actor": "ana"}).content.decode()
    assert "Page 1 of 2" in paged and "action=light.set&amp;actor=ana&amp;page=2" in paged
    assert staff_client.get("/activity/", {"interface": "bogus", "page": "x"}).status_code == 200


def test_static_files_are_served_by_the_hub(staff_client):
    for path in [
        "/static/dashboard/app.css",
        "/static/dashboard/app.js",
        "/static/ninja/swagger-ui-bundle.js",
    ]:
        response = staff_client.get(path)
        assert response.status_code == 200, path
