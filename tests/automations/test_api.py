"""/api/rooms and /api/scenes per household role and per token scope."""

from __future__ import annotations

import pytest

from audit.models import Event
from automations import services
from automations.models import Scene
from devices.home.models import Light
from mcp_endpoint.auth.tokens import create_token
from tests.hub_support import create_account

pytestmark = pytest.mark.django_db(transaction=True)

JSON = "application/json"


def bearer(scopes, name="integrator"):
    token = create_token(name, list(scopes), actor="test", interface="system")[1]
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


@pytest.fixture
def scene(home):
    services.save_scene("Cena", {"salon": True}, actor="ana", interface="dashboard")


def logged_in(client, role):
    client.force_login(create_account(role, "pw-for-tests-only", role))
    return client


def test_a_guest_sees_rooms_and_scenes_but_cannot_run_or_write_them(client, scene):
    guest = logged_in(client, "guest")
    assert guest.get("/api/rooms").json()["rooms"][0]["name"] == "Salón"
    assert [s["name"] for s in guest.get("/api/scenes").json()] == ["Cena"]
    refused = guest.post("/api/scenes/Cena/activate")
    assert refused.status_code == 403 and "member" in refused.json()["detail"]
    assert guest.put("/api/scenes/New", {"lights": {}}, content_type=JSON).status_code == 403
    assert Light.objects.get(name="salon").on is False


def test_a_member_runs_scenes_but_does_not_write_them(client, scene):
    member = logged_in(client, "member")
    ran = member.post("/api/scenes/Cena/activate")
    assert ran.status_code == 200 and ran.json()["ok"] is True
    assert Light.objects.get(name="salon").on is True
    assert Event.objects.filter(action="scene.activate", actor="member", interface="rest").exists()
    refused = member.put("/api/scenes/Cena", {"lights": {"salon": False}}, content_type=JSON)
    assert refused.status_code == 403 and "owner" in refused.json()["detail"]
    assert member.delete("/api/scenes/Cena").status_code == 403
    assert Scene.objects.get().lights == {"salon": True}
    assert member.post("/api/scenes/Nada/activate").status_code == 404


def test_a_members_scene_steps_are_held_to_the_members_role(client, home):
    services.save_scene(
        "Escribir",
        {"salon": True},
        [{"tool": "scene_save", "arguments": {"name": "Otra", "lights": {"salon": False}}}],
        actor="owner",
        interface="dashboard",
    )
    result = logged_in(client, "member").post("/api/scenes/Escribir/activate").json()
    assert result["steps"][0]["ok"] is True
    assert result["steps"][1]["ok"] is False and "automations" in result["steps"][1]["error"]
    assert not Scene.objects.filter(name="Otra").exists()


def test_an_owner_writes_scenes_and_a_bad_light_is_named(client, scene):
    owner = logged_in(client, "owner")
    bad = owner.put("/api/scenes/Noche", {"lights": {"salon": True, "sotano": False}}, content_type=JSON)
    assert bad.status_code == 400 and "'sotano'" in bad.json()["detail"]
    assert not Scene.objects.filter(name="Noche").exists()
    saved = owner.put("/api/scenes/Noche", {"lights": {"dormitorio": False}}, content_type=JSON)
    assert saved.status_code == 200 and saved.json()["lights"] == {"dormitorio": False}
    assert owner.delete("/api/scenes/Noche").status_code == 204
    assert Event.objects.filter(action="scene.delete", actor="owner", interface="rest").exists()


def test_tokens_need_the_automations_scope_to_write(client, scene):
    reader = bearer(["read", "control"], name="reader")
    assert client.get("/api/scenes", **reader).status_code == 200
    refused = client.put("/api/scenes/X", {"lights": {}}, content_type=JSON, **reader)
    assert refused.status_code == 403 and "automations" in refused.json()["detail"]
    writer = bearer(["automations"], name="writer")
    assert (
        client.put("/api/scenes/X", {"lights": {"cocina": True}}, content_type=JSON, **writer).status_code
        == 200
    )
    assert Event.objects.get(action="scene.save", target="scene:X").actor == "writer"
