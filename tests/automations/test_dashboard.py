"""The Home page grouped by room and the Scenes page, per household role."""

from __future__ import annotations

import re

import pytest
from django.utils import timezone

from audit.models import Event
from automations import services
from automations.models import Room, RoomAgent, Scene
from devices.agents.models import Agent
from devices.home.models import Light
from devices.telemetry.models import TelemetryReading
from tests.hub_support import create_account
from tests.telemetry_support import store_readings

pytestmark = pytest.mark.django_db(transaction=True)


def logged_in(client, role):
    client.force_login(create_account(role, "pw-for-tests-only", role))
    return client


def card(html: str, room: str) -> str:
    """The Home page's card of `room` ("" for what is in no room)."""
    found = re.search(
        rf'<section class="card card-room"[^>]*data-room="{re.escape(room)}">(.*?)</section>', html, re.S
    )
    assert found, f"no card for {room!r}"
    return found.group(1)


def test_home_shows_one_card_per_room_with_its_lights_values_and_devices(client, home):
    services.map_zone("living_room", "Salón", actor="ana", interface="admin")
    RoomAgent.objects.create(
        room=Room.objects.get(name="Salón"),
        agent=Agent.objects.create(agent_id="aa:01", name="Speaker", approved=True),
    )
    Light.objects.create(name="patio", label="Patio")
    store_readings(
        [
            TelemetryReading(
                zone="living_room",
                device_type="esp32",
                device_id="d1",
                channel="co2",
                value=612,
                unit="ppm",
                measured_at=timezone.now(),
            )
        ]
    )
    html = logged_in(client, "guest").get("/").content.decode()
    assert [m for m in re.findall(r'data-room="([^"]*)"', html)] == [
        "Salón",
        "Cocina",
        "Dormitorio",
        "Baño",
        "Garage",
        "",
    ]
    salon = card(html, "Salón")
    assert 'data-light="salon"' in salon and "612" in salon and "Speaker" in salon
    assert 'data-light="cocina"' not in salon and 'data-light="cocina"' in card(html, "Cocina")
    assert 'data-light="patio"' in card(html, "")  # in no room
    assert 'data-light="patio"' not in salon


def test_scenes_one_click_away_on_home_for_members_not_guests(client, home):
    services.save_scene("Cena", {"salon": True}, actor="ana", interface="dashboard")
    guest_home = logged_in(client, "guest").get("/").content.decode()
    assert "Cena" in guest_home and 'data-scene="Cena"' not in guest_home
    assert client.post("/scenes/activate/", {"name": "Cena"}).status_code == 403
    assert Light.objects.get(name="salon").on is False
    client.logout()
    member = logged_in(client, "member")
    assert 'data-scene="Cena"' in member.get("/").content.decode()
    response = member.post("/scenes/activate/", {"name": "Cena", "from": "home"})
    assert response.status_code == 302 and response["Location"] == "/"
    assert Light.objects.get(name="salon").on is True
    event = Event.objects.get(action="scene.activate")
    assert (event.actor, event.interface) == ("member", "dashboard")


def test_only_owners_write_scenes(client, home):
    services.save_scene("Cena", {"salon": True}, actor="ana", interface="dashboard")
    member = logged_in(client, "member")
    page = member.get("/scenes/").content.decode()
    assert "Activate" in page and "Save the scene" not in page
    assert member.post("/scenes/save/", {"name": "X", "light-salon": "on"}).status_code == 403
    assert member.post("/scenes/delete/", {"name": "Cena"}).status_code == 403
    assert list(Scene.objects.values_list("name", flat=True)) == ["Cena"]
    client.logout()
    owner = logged_in(client, "owner")
    assert "Save the scene" in owner.get("/scenes/").content.decode()
    owner.post(
        "/scenes/save/", {"name": "Noche", "light-salon": "off", "light-cocina": "on", "tool_calls": "[]"}
    )
    assert Scene.objects.get(name="Noche").lights == {"salon": False, "cocina": True}
    bad = owner.post("/scenes/save/", {"name": "Mala", "tool_calls": '[{"tool": "nope"}]'}, follow=True)
    assert (
        "unknown tool &#x27;nope&#x27;" in bad.content.decode()
        and not Scene.objects.filter(name="Mala").exists()
    )
    assert "Noche" in owner.get("/scenes/?edit=Noche").content.decode()
    owner.post("/scenes/delete/", {"name": "Noche"})
    assert not Scene.objects.filter(name="Noche").exists()
