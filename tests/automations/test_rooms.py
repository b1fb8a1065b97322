"""Rooms: seed_home makes seed 000's rooms (once), the owner's zone table places sensors, and
list_rooms, /api/rooms answer each room with its lights, latest values and devices."""

from __future__ import annotations

from io import StringIO

import pytest
from asgiref.sync import async_to_sync
from django.core.management import call_command
from django.db import IntegrityError, transaction
from django.utils import timezone

from audit.models import Event
from automations import services
from automations.models import Room, RoomAgent, RoomLight
from devices.agents.models import Agent
from devices.home.models import Light
from devices.telemetry.models import TelemetryReading
from mcp_endpoint.engine.pipeline import call_tool
from mcp_endpoint.engine.tools import Caller, ToolContext
from tests.telemetry_support import store_readings

pytestmark = pytest.mark.django_db

READER = Caller(actor="reader", interface="mcp-http", scopes=frozenset({"read"}))
SEED_ROOMS = ["Salón", "Cocina", "Dormitorio", "Baño", "Garage"]


def test_seed_home_makes_seed_000s_rooms_once_and_says_what_it_always_said():
    out = StringIO()
    call_command("seed_home", stdout=out)
    assert out.getvalue().strip() == "Home ready (created: 5 lights, 2 people, 1 alarm)."
    assert list(Room.objects.values_list("name", flat=True)) == SEED_ROOMS
    assert RoomLight.objects.get(light__name="salon").room.name == "Salón"
    last = (
        Event.objects.order_by("-pk").values_list("pk", flat=True).first()
    )  # ids are not counts (PostgreSQL)
    call_command("seed_home", stdout=StringIO())
    call_command("seed_home", "--reset", stdout=StringIO())
    assert Room.objects.count() == 5 and RoomLight.objects.count() == 5
    assert not Event.objects.filter(action__startswith="room.", pk__gt=last).exists()


def move(light: str, room: str) -> None:
    """The owner moves a light to another room (as the admin's inline does)."""
    RoomLight.objects.filter(light__name=light).update(room=Room.objects.get_or_create(name=room)[0])


def test_seed_home_keeps_the_owners_moves(home):
    move("garage", "Entrada")
    call_command("seed_home", stdout=StringIO())
    assert RoomLight.objects.get(light__name="garage").room.name == "Entrada"


def test_list_rooms_groups_lights_sensors_and_devices(home):
    services.map_zone("living_room", "Salón", actor="ana", interface="admin")
    agent = Agent.objects.create(agent_id="aa:01", name="Speaker", online=True, approved=True)
    RoomAgent.objects.create(room=Room.objects.get(name="Salón"), agent=agent)
    Agent.objects.create(agent_id="aa:02", name="Loose", approved=True)
    Light.objects.create(name="patio", label="Patio")
    now = timezone.now()
    store_readings(
        [
            TelemetryReading(
                zone=z,
                device_type="esp32",
                device_id="d1",
                channel="temperature",
                value=v,
                unit="C",
                measured_at=now,
            )
            for z, v in (("living_room", 21.5), ("attic", 30.0))
        ]
    )
    result = async_to_sync(call_tool)("list_rooms", {}, ToolContext(caller=READER))
    assert not result.is_error, result.text
    rooms = {r["name"]: r for r in result.structured["rooms"]}
    assert list(rooms) == SEED_ROOMS
    salon = rooms["Salón"]
    assert salon["lights"] == [{"name": "salon", "label": "Salón", "on": False}]
    assert salon["zones"] == ["living_room"]
    assert [(s["channel"], s["value"]) for s in salon["sensors"]] == [("temperature", 21.5)]
    assert salon["devices"] == [{"agent_id": "aa:01", "name": "Speaker", "online": True}]
    elsewhere = result.structured["elsewhere"]
    assert [light["name"] for light in elsewhere["lights"]] == ["patio"]
    assert [s["value"] for s in elsewhere["sensors"]] == [30.0]
    assert [d["agent_id"] for d in elsewhere["devices"]] == ["aa:02"]


def test_a_light_and_an_agent_are_in_at_most_one_room(home):
    move("salon", "Entrada")
    with pytest.raises(IntegrityError), transaction.atomic():
        RoomLight.objects.create(room=Room.objects.get(name="Cocina"), light=Light.objects.get(name="salon"))
    assert RoomLight.objects.filter(light__name="salon").count() == 1
    assert RoomLight.objects.get(light__name="salon").room.name == "Entrada"
    agent = Agent.objects.create(agent_id="aa:01", approved=True)
    RoomAgent.objects.create(room=Room.objects.get(name="Entrada"), agent=agent)
    with pytest.raises(IntegrityError), transaction.atomic():
        RoomAgent.objects.create(room=Room.objects.get(name="Cocina"), agent=agent)
