"""The REST API's home endpoints with Django's test client: auth, scopes, errors, pagination."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from audit.models import Event
from devices.agents.models import Agent, AgentTool
from devices.home import services
from devices.home.models import Light
from devices.telemetry.models import TelemetryReading
from mcp_endpoint.auth.tokens import create_token
from tests.hub_support import create_account
from tests.telemetry_support import store_readings

pytestmark = pytest.mark.django_db


def bearer(scopes=("read", "control", "fel", "devices"), name="integrator"):
    token = create_token(name, list(scopes), actor="test", interface="system")[1]
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


@pytest.fixture
def agent(db):
    agent = Agent.objects.create(agent_id="aa:bb", name="Speaker", online=False, approved=True)
    AgentTool.objects.create(agent=agent, name="self.get_status", input_schema={"type": "object"})
    return agent


def test_no_credentials_is_401_json(client, home):
    response = client.get("/api/lights")
    assert response.status_code == 401
    assert "detail" in response.json()
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert client.get("/api/lights", HTTP_AUTHORIZATION="Bearer hh_nope_nope").status_code == 401


def test_lights_list_get_change(client, home):
    auth = bearer()
    lights = client.get("/api/lights", **auth).json()
    assert [light["name"] for light in lights] == ["salon", "cocina", "dormitorio", "bano", "garage"]
    assert client.get("/api/lights/cocina", **auth).json()["on"] is False
    missing = client.get("/api/lights/nope", **auth)
    assert missing.status_code == 404 and missing.json()["detail"] == "Luz 'nope' no encontrada"
    changed = client.patch("/api/lights/cocina", {"on": True}, content_type="application/json", **auth)
    assert changed.status_code == 200 and changed.json()["on"] is True
    assert Light.objects.get(name="cocina").on is True
    event = Event.objects.get(action="light.set")
    assert (event.interface, event.actor) == ("rest", "integrator")
    assert (
        client.patch("/api/lights/nope", {"on": True}, content_type="application/json", **auth).status_code
        == 404
    )


def test_scopes_are_enforced(client, home):
    reader = bearer(["read"], name="reader")
    refused = client.patch("/api/lights/salon", {"on": True}, content_type="application/json", **reader)
    assert refused.status_code == 403 and "control" in refused.json()["detail"]
    assert Light.objects.get(name="salon").on is False
    assert not Event.objects.filter(action="light.set").exists()
    controller = bearer(["control"], name="ctl")
    assert client.get("/api/lights", **controller).status_code == 403
    assert client.get("/api/invoices", **reader).status_code == 403
    assert (
        client.post("/api/agents/x/tools/y/call", {}, content_type="application/json", **reader).status_code
        == 403
    )


def test_validation_errors(client, home):
    auth = bearer()
    wrong = client.patch("/api/lights/salon", {"on": "maybe"}, content_type="application/json", **auth)
    assert wrong.status_code == 422 and isinstance(wrong.json()["detail"], list)
    assert client.patch("/api/alarm", {}, content_type="application/json", **auth).status_code == 422
    malformed = client.patch("/api/alarm", "{not json", content_type="application/json", **auth)
    assert malformed.status_code in (400, 422)
    assert client.get("/api/events", {"limit": 0}, **auth).status_code == 422
    assert client.get("/api/events", {"interface": "carrier-pigeon"}, **auth).status_code == 422


def test_alarm_and_people(client, home, settings, django_user_model):
    """The alarm changes for a logged-in person at once; a token's holder arms it at once (the
    safe direction) but waits for a person's confirmation to disarm it
    (mcp_endpoint.controls.confirmation), and without one nothing changes."""
    settings.MCP_CONFIRMATION_SECONDS = 0.3
    auth = bearer()
    assert client.get("/api/alarm", **auth).json()["armed"] is False
    arming = client.patch("/api/alarm", {"armed": True}, content_type="application/json", **auth)
    assert arming.status_code == 200 and arming.json()["armed"] is True
    waited = client.patch("/api/alarm", {"armed": False}, content_type="application/json", **auth)
    assert waited.status_code == 403
    assert "needs a person's confirmation" in waited.json()["detail"]
    assert client.get("/api/alarm", **auth).json()["armed"] is True
    refused = Event.objects.get(action="tool.call", target="tool:set_alarm_state", after__ok=False)
    assert refused.interface == "rest" and "not approved" in refused.after["confirmation"]
    client.force_login(create_account("ana", "pw-long-enough-1"))
    assert not client.patch("/api/alarm", {"armed": False}, content_type="application/json").json()["armed"]
    client.logout()
    people = client.get("/api/people", **auth).json()
    assert {p["name"] for p in people} == {"Carlos", "Ana"}
    ana = client.patch("/api/people/Ana", {"present": True}, content_type="application/json", **auth)
    assert ana.json()["present"] is True
    assert (
        client.patch(
            "/api/people/Zoe", {"present": True}, content_type="application/json", **auth
        ).status_code
        == 404
    )
    assert set(Event.objects.filter(interface="rest").values_list("action", flat=True)) == {
        "tool.call",
        "alarm.set",
        "person.set",
    }


def test_session_auth_needs_csrf_for_changes(django_user_model, home):
    from django.test import Client

    user = create_account("ana", "pw-long-enough-1")
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(user)
    assert browser.get("/api/lights").status_code == 200
    refused = browser.patch("/api/lights/salon", {"on": True}, content_type="application/json")
    assert refused.status_code in (401, 403)
    assert Light.objects.get(name="salon").on is False
    browser.get("/")  # sets the CSRF cookie
    token = browser.cookies["csrftoken"].value
    done = browser.patch(
        "/api/lights/salon", {"on": True}, content_type="application/json", HTTP_X_CSRFTOKEN=token
    )
    assert done.status_code == 200
    assert Event.objects.get(action="light.set").actor == "ana"


def test_agents(client, agent):
    auth = bearer()
    assert client.get("/api/agents", **auth).json()[0]["agent_id"] == "aa:bb"
    detail = client.get("/api/agents/aa:bb", **auth).json()
    assert detail["transport"] == "ws" and detail["tools"][0]["name"] == "self.get_status"
    assert client.get("/api/agents/aa:bb/tools", **auth).json()[0]["name"] == "self.get_status"
    assert client.get("/api/agents/zz", **auth).status_code == 404
    offline = client.post(
        "/api/agents/aa:bb/tools/self.get_status/call",
        {"arguments": {}},
        content_type="application/json",
        **auth,
    )
    assert offline.status_code == 409 and "offline" in offline.json()["detail"]
    no_tool = client.post(
        "/api/agents/aa:bb/tools/self.nope/call", {}, content_type="application/json", **auth
    )
    assert no_tool.status_code == 404
    assert (
        client.post("/api/agents/zz/tools/t/call", {}, content_type="application/json", **auth).status_code
        == 404
    )


def test_sensors_and_telemetry_pagination(client, db):
    now = timezone.now()
    store_readings(
        TelemetryReading(
            zone="z",
            device_type="sensor",
            device_id="d1",
            channel="temp",
            value=i,
            unit="C",
            measured_at=now - timedelta(minutes=i),
        )
        for i in range(30)
    )
    auth = bearer(["read"])
    latest = client.get("/api/sensors", **auth).json()
    assert latest == [{**latest[0], "path": "z/sensor/d1/temp", "value": 0.0, "unit": "C"}]
    url = "/api/telemetry/z/sensor/d1/temp"
    page = client.get(url, {"limit": 10, "offset": 5}, **auth).json()
    assert page["count"] == 30 and [r["value"] for r in page["items"]] == list(range(5, 15))
    since = (now - timedelta(minutes=9, seconds=30)).isoformat()
    assert client.get(url, {"since": since}, **auth).json()["count"] == 10
    until = (now - timedelta(minutes=19, seconds=30)).isoformat()
    assert client.get(url, {"until": until}, **auth).json()["count"] == 10
    assert client.get("/api/telemetry/z/sensor/d1/nope", **auth).status_code == 404
    assert client.get(url, {"limit": 501}, **auth).status_code == 422


def test_events_filtered_and_paginated(client, home):
    auth = bearer(["read"])
    for i in range(12):
        services.set_light_state("salon", bool(i % 2), actor="ana", interface="mcp-http")
    services.set_alarm_state(True, actor="carlos", interface="admin")
    page = client.get("/api/events", {"limit": 5}, **auth).json()
    # + the seed's events (the home, its rooms) and the token's
    assert page["count"] == 16 and len(page["items"]) == 5
    assert page["items"][0]["action"] == "alarm.set"
    assert client.get("/api/events", {"interface": "mcp-http"}, **auth).json()["count"] == 12
    assert client.get("/api/events", {"actor": "carl"}, **auth).json()["count"] == 1
    assert client.get("/api/events", {"action": "alarm.set"}, **auth).json()["count"] == 1
    light = client.get("/api/events", {"action": "light.set", "interface": "mcp-http"}, **auth).json()
    assert light["count"] == 12 and {e["action"] for e in light["items"]} == {"light.set"}
    assert client.get("/api/events", {"target": "light:salon", "offset": 10}, **auth).json()["items"][-1][
        "before"
    ] == {"on": False}


def test_openapi_and_docs_need_a_login(client, db):
    for path in ("/api/openapi.json", "/api/docs"):
        refused = client.get(path)
        assert refused.status_code == 302 and refused["location"].startswith("/login/?next=/api/")
    client.force_login(User.objects.create_user("reader", password="pw-for-tests-only"))
    schema = client.get("/api/openapi.json").json()
    for path in [
        "/api/lights",
        "/api/alarm",
        "/api/people",
        "/api/agents",
        "/api/sensors",
        "/api/events",
        "/api/invoices",
        "/api/invoices/validate",
    ]:
        assert path in schema["paths"], path
    docs = client.get("/api/docs")
    assert docs.status_code == 200 and b"cdn" not in docs.content.lower()


def test_rest_and_dashboard_switch_lights_through_the_one_pipeline(client, staff_client, home):
    """As an MCP client does: counted per door in /metrics, a missing light still a 404."""
    from prometheus_client import REGISTRY

    def counted(door: str, outcome: str = "ok") -> float:
        labels = {"tool": "set_light_state", "outcome": outcome, "interface": door}
        return REGISTRY.get_sample_value("homehub_mcp_tool_calls_total", labels) or 0.0

    before = counted("rest"), counted("dashboard"), counted("rest", "error")
    token = create_token("switcher", ["read", "control"], actor="test", interface="system")[1]
    patched = client.patch(
        "/api/lights/salon",
        {"on": True},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    missing = client.patch(
        "/api/lights/nope",
        {"on": True},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    staff_client.post("/lights/cocina/", {"on": "1"}, HTTP_ACCEPT="application/json")
    assert patched.status_code == 200 and patched.json()["on"] is True
    assert missing.status_code == 404 and missing.json()["detail"] == "Luz 'nope' no encontrada"
    assert Light.objects.get(name="cocina").on
    after = counted("rest"), counted("dashboard"), counted("rest", "error")
    assert after == (before[0] + 1, before[1] + 1, before[2] + 1)
