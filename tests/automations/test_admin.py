"""The admin of rooms and scenes: changes audited, a scene's unknown light refused."""

import pytest

from audit.models import Event
from automations.models import Room, Scene, ZoneRoom

pytestmark = pytest.mark.django_db


def test_the_owner_maps_a_zone_in_the_admin_audited(staff_client, home):
    room = Room.objects.get(name="Salón")
    response = staff_client.post("/admin/automations/zoneroom/add/", {"zone": "living_room", "room": room.pk})
    assert response.status_code == 302
    assert ZoneRoom.objects.get().room == room
    assert Event.objects.filter(actor="boss", interface="admin", action__startswith="zoneroom.").exists()


def test_a_scene_with_an_unknown_light_is_refused_in_the_admin(staff_client, home):
    form = {"name": "Noche", "lights": '{"sotano": true}', "tool_calls": "[]"}
    response = staff_client.post("/admin/automations/scene/add/", form)
    assert response.status_code == 200 and "sotano" in response.content.decode()
    assert not Scene.objects.exists()
    calls = {"name": "Noche", "lights": "{}", "tool_calls": '[{"tool": "nope"}]'}
    assert "unknown tool" in staff_client.post("/admin/automations/scene/add/", calls).content.decode()
    assert not Scene.objects.exists()
    for page in ("room", "roomlight", "roomagent", "zoneroom", "scene"):
        assert staff_client.get(f"/admin/automations/{page}/").status_code == 200
