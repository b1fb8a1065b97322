"""/api/automations per household role and per token scope, and the admin's automations."""

from __future__ import annotations

from typing import Any

import pytest

from audit.models import Event
from automations import authoring
from automations.models import Automation
from mcp_endpoint.auth.tokens import create_token
from tests.hub_support import create_account

pytestmark = pytest.mark.django_db

JSON = "application/json"
DEFINITION: dict[str, Any] = {
    "name": "Night",
    "triggers": [{"type": "time", "cron": "0 23 * * *"}],
    "actions": [{"tool": "set_light_state", "arguments": {"name": "salon", "on": False}}],
}


def bearer(scopes):
    token = create_token("integrator", list(scopes), actor="test", interface="system")[1]
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


def logged_in(client, role):
    client.force_login(create_account(role, "pw-for-tests-only", role))
    return client


def test_an_owner_writes_tries_enables_restores_and_deletes(client, home):
    owner = logged_in(client, "owner")
    bad = {"definition": {**DEFINITION, "triggers": [{"type": "time", "cron": "nope"}]}}
    refused = owner.post("/api/automations", bad, content_type=JSON)
    assert refused.status_code == 400 and refused.json()["errors"][0].startswith("triggers[0].cron:")
    checked = owner.post("/api/automations/validate", bad, content_type=JSON).json()
    assert checked["valid"] is False and checked["errors"][0].startswith("triggers[0].cron:")
    tried = owner.post("/api/automations/dry-run", {"definition": DEFINITION, "days": 3}, content_type=JSON)
    assert tried.status_code == 200 and len(tried.json()["fired"]) == 3 and "from" in tried.json()
    saved = owner.post("/api/automations?enable=true", {"definition": DEFINITION}, content_type=JSON)
    assert saved.status_code == 200 and saved.json()["enabled"] and saved.json()["enabled_by"] == "owner"
    changed = {"definition": {**DEFINITION, "description": "v2"}}
    assert owner.post("/api/automations", changed, content_type=JSON).json()["version"] == 2
    assert [a["name"] for a in owner.get("/api/automations").json()] == ["Night"]
    detail = owner.get("/api/automations/Night").json()
    assert [v["number"] for v in detail["versions"]] == [2, 1]
    assert owner.post("/api/automations/Night/disable").json()["enabled"] is False
    stale = owner.post("/api/automations/Night/enable", {"version": 1}, content_type=JSON)
    assert stale.status_code == 400 and "version 2 now" in stale.json()["detail"]
    assert owner.post("/api/automations/Night/enable", {"version": 2}, content_type=JSON).json()["enabled"]
    assert owner.post("/api/automations/Night/restore/1").json()["version"] == 3
    assert owner.get("/api/automations/runs?name=Night").json() == []
    assert owner.delete("/api/automations/Night").status_code == 204
    assert owner.get("/api/automations/Night").status_code == 404
    assert Event.objects.filter(actor="owner", interface="rest", action="automation.delete").exists()


def test_a_member_reads_but_cannot_write(client, home):
    authoring.save_automation(DEFINITION, actor="ana", interface="rest")
    member = logged_in(client, "member")
    assert member.get("/api/automations").status_code == 200
    refused = member.post("/api/automations", {"definition": DEFINITION}, content_type=JSON)
    assert refused.status_code == 403 and "owner" in refused.json()["detail"]
    assert member.post("/api/automations/Night/disable").status_code == 403
    assert member.delete("/api/automations/Night").status_code == 403


def test_a_token_saves_disabled_within_its_scopes_and_cannot_enable_at_once(client, home):
    narrow = bearer(["read", "automations"])
    refused = client.post("/api/automations", {"definition": DEFINITION}, content_type=JSON, **narrow)
    assert refused.status_code == 400 and "'control' scope" in refused.json()["errors"][0]
    token = bearer(["read", "control", "automations"])
    saved = client.post(
        "/api/automations?enable=true", {"definition": DEFINITION}, content_type=JSON, **token
    )
    assert saved.status_code == 403
    saved = client.post("/api/automations", {"definition": DEFINITION}, content_type=JSON, **token)
    assert saved.status_code == 200 and saved.json()["enabled"] is False
    assert client.get("/api/automations", **bearer(["control"])).status_code == 403
    assert not Automation.objects.get().enabled


def test_the_admin_shows_versions_and_runs_and_enables_through_authoring(staff_client, home):
    authoring.save_automation(DEFINITION, actor="ana", interface="rest")
    row = Automation.objects.get()
    assert staff_client.get("/admin/automations/automation/").status_code == 200
    page = staff_client.get(f"/admin/automations/automation/{row.pk}/change/")
    assert page.status_code == 200 and "0 23 * * *" in page.content.decode()
    staff_client.post("/admin/automations/automation/", {"action": "enable", "_selected_action": [row.pk]})
    row.refresh_from_db()
    assert row.enabled and row.enabled_by is not None and row.enabled_by.get_username() == "boss"
    assert Event.objects.filter(actor="boss", interface="admin", action="automation.enable").exists()
