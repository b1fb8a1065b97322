"""What the MCP engine changes itself is in the audit trail (and on the Activity page): tokens
made and revoked, outbound endpoints added, changed and removed (never their secret), the
catalogue's edits, OAuth grants and their revocation."""

from __future__ import annotations

import io
from urllib.parse import urlencode

import pytest
from django.core.management import call_command

from audit.models import Event
from mcp_endpoint.auth import tokens
from mcp_endpoint.models import AccessToken, OutboundEndpoint, ToolSetting
from tests.mcp_endpoint.test_oauth_server import browser, connect, owner  # noqa: F401 (fixtures)
from tests.xiaozhi_support import TOKEN

pytestmark = pytest.mark.django_db

URL = f"wss://api.xiaozhi.me/mcp/?token={TOKEN}"


def on_activity_page(client, action: str) -> bool:
    return action in client.get("/activity/", {"action": action}).content.decode()


def test_tokens_made_by_the_command_and_the_admin_and_revoked_are_audited(staff_client):
    out = io.StringIO()
    call_command("create_mcp_token", "kitchen-llm", "--scopes", "read", stdout=out, stderr=io.StringIO())
    secret = out.getvalue().strip()
    made = Event.objects.get(action="token.create")
    row = AccessToken.objects.get(name="kitchen-llm")
    assert (made.actor, made.interface, made.target) == ("create_mcp_token", "system", f"token:{row.key_id}")
    assert made.after["scopes"] == ["read"] and secret not in str(made.after)

    added = staff_client.post(
        "/admin/mcp_endpoint/accesstoken/add/", {"name": "hall-llm", "scopes": ["read"], "owner": ""}
    )
    assert added.status_code == 302
    by_admin = Event.objects.get(action="token.create", actor="boss")
    assert by_admin.interface == "admin" and by_admin.after["name"] == "hall-llm"
    hall = AccessToken.objects.get(name="hall-llm")
    change = f"/admin/mcp_endpoint/accesstoken/{hall.pk}/change/"
    form = {"name": "hall-llm", "owner": "", "scopes": ["read", "control"], "expires_at": ""}
    assert staff_client.post(change, form).status_code == 302
    edited = Event.objects.get(action="token.edit")
    assert (edited.before, edited.after) == ({"scopes": ["read"]}, {"scopes": ["read", "control"]})
    assert staff_client.post(change, {**form, "revoked": "on"}).status_code == 302
    assert Event.objects.get(action="token.revoke", target=f"token:{hall.key_id}").after == {"revoked": True}

    staff_client.post(
        "/admin/mcp_endpoint/accesstoken/",
        {"action": "revoke", "_selected_action": [row.pk]},
    )
    revoked = Event.objects.get(action="token.revoke", target=f"token:{row.key_id}")
    assert (revoked.actor, revoked.interface) == ("boss", "admin")
    assert tokens.authenticate(secret) is None
    assert on_activity_page(staff_client, "token.create") and on_activity_page(staff_client, "token.revoke")


def test_endpoints_added_changed_and_removed_are_audited_without_their_secret(staff_client):
    call_command("add_mcp_endpoint", "kitchen", URL, stdout=io.StringIO(), stderr=io.StringIO())
    call_command(
        "add_mcp_endpoint",
        "kitchen",
        URL + "x",
        "--scopes",
        "read",
        stdout=io.StringIO(),
        stderr=io.StringIO(),
    )
    endpoint = OutboundEndpoint.objects.get(name="kitchen")
    form = {"name": "kitchen", "url": "", "scopes": ["read"], "tools": "get_presence", "enabled": "on"}
    saved = staff_client.post(f"/admin/mcp_endpoint/outboundendpoint/{endpoint.pk}/change/", form)
    assert saved.status_code == 302
    staff_client.post(f"/admin/mcp_endpoint/outboundendpoint/{endpoint.pk}/delete/", {"post": "yes"})
    assert not OutboundEndpoint.objects.exists()

    events = list(Event.objects.filter(target="endpoint:kitchen").order_by("id"))
    assert [(e.action, e.actor) for e in events] == [
        ("endpoint.create", "add_mcp_endpoint"),
        ("endpoint.edit", "add_mcp_endpoint"),
        ("endpoint.edit", "boss"),
        ("endpoint.delete", "boss"),
    ]
    assert events[0].after["url"] == "wss://api.xiaozhi.me/mcp/?token=…"
    assert events[1].after["scopes"] == ["read"] and events[1].after["url_changed"] is True
    assert events[2].after == {"tools": ["get_presence"]}
    for event in events:
        assert TOKEN not in str(event.before) + str(event.after)
    assert on_activity_page(staff_client, "endpoint.delete")


def test_catalogue_edits_are_audited(staff_client):
    ToolSetting.objects.create(name="set_light_state")
    row = ToolSetting.objects.get(name="set_light_state")
    staff_client.post("/admin/mcp_endpoint/toolsetting/", {"action": "disable", "_selected_action": [row.pk]})
    event = Event.objects.get(action="toolsetting.edit", target="tool:set_light_state")
    assert (event.actor, event.before, event.after) == ("boss", {"enabled": True}, {"enabled": False})
    assert on_activity_page(staff_client, "toolsetting.edit")


def test_oauth_grants_and_a_clients_own_revocation_are_audited(browser):  # noqa: F811
    client_id, answer = connect(browser, scopes=["read"])
    granted = Event.objects.get(action="oauth.grant")
    assert (granted.actor, granted.interface) == ("owner", "dashboard")
    response = browser.post(
        "/oauth/revoke",
        urlencode({"token": answer["refresh_token"], "client_id": client_id}),
        content_type="application/x-www-form-urlencoded",
    )
    assert response.status_code == 200
    revoked = Event.objects.get(action="oauth.revoke")
    assert revoked.interface == "mcp-http" and revoked.before["owner"] == "owner"
    # The grant's token goes with it, audited too; no secret anywhere.
    assert Event.objects.filter(action="token.revoke").exists()
    for event in Event.objects.all():
        assert answer["access_token"] not in str(event.after) + str(event.before)
