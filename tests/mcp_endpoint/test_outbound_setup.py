"""Setting up outbound MCP endpoints: `add_mcp_endpoint` and the admin, the token never shown."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from mcp_endpoint.models import OutboundEndpoint
from tests.xiaozhi_support import TOKEN

URL = f"wss://api.xiaozhi.me/mcp/?token={TOKEN}"
MASKED = "wss://api.xiaozhi.me/mcp/?token=…"


def run(*args: str, stdin: str = "") -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("add_mcp_endpoint", *args, stdout=out, stderr=err, stdin=io.StringIO(stdin))
    return out.getvalue(), err.getvalue()


def test_add_mcp_endpoint_with_the_default_tools_then_changed(db, settings):
    out, err = run("kitchen", URL)
    endpoint = OutboundEndpoint.objects.get(name="kitchen")
    assert endpoint.url == URL and endpoint.enabled
    assert endpoint.scopes == ["read", "control"]
    assert endpoint.tools == settings.MCP_ENDPOINT_DEFAULT_TOOLS
    assert f"Endpoint 'kitchen' added ({MASKED})" in out and TOKEN not in out + err
    assert err == ""  # every default tool exists, within read and control

    out, err = run("kitchen", URL, "--scopes", "read", "--tools", "get_presence,set_light_state,no_such_tool")
    endpoint.refresh_from_db()
    assert endpoint.tools == ["get_presence", "set_light_state", "no_such_tool"] and endpoint.scopes == [
        "read"
    ]
    assert "Endpoint 'kitchen' changed" in out
    assert "no tool is named no_such_tool now" in err
    assert "set_light_state need a scope the endpoint lacks" in err


def test_the_url_may_come_from_stdin_and_bad_input_is_refused_without_quoting_it(db):
    out, _ = run("hall", "-", "--disabled", stdin=URL + "\n")
    assert OutboundEndpoint.objects.get(name="hall").url == URL and "saved, disabled" in out
    for args, message in [
        (("x", f"https://api.xiaozhi.me/mcp/?token={TOKEN}"), "must start with wss://"),
        (("x", URL, "--scopes", "root"), "unknown scope(s): root"),
        (("x", URL, "--scopes", ""), "at least one scope"),
        (("x", URL, "--tools", "bad name!"), "not a tool name: bad name!"),
    ]:
        with pytest.raises(CommandError) as refused:
            run(*args)
        assert message in str(refused.value) and TOKEN not in str(refused.value)


def test_the_admin_shows_the_url_masked_and_keeps_it_when_left_empty(staff_client):
    endpoint = OutboundEndpoint.objects.create(
        name="kitchen", url=URL, scopes=["read", "control"], tools=["get_presence"], last_error="HTTP 401"
    )
    listing = staff_client.get("/admin/mcp_endpoint/outboundendpoint/")
    change = staff_client.get(f"/admin/mcp_endpoint/outboundendpoint/{endpoint.pk}/change/")
    for page in (listing, change):
        assert page.status_code == 200
        assert MASKED in page.content.decode() and TOKEN not in page.content.decode()

    form = {
        "name": "kitchen",
        "url": "",
        "scopes": ["read"],
        "tools": "get_presence, list_lights_on",
        "enabled": "on",
    }
    saved = staff_client.post(f"/admin/mcp_endpoint/outboundendpoint/{endpoint.pk}/change/", form)
    assert saved.status_code == 302
    endpoint.refresh_from_db()
    assert (
        endpoint.url == URL
        and endpoint.scopes == ["read"]
        and endpoint.tools == ["get_presence", "list_lights_on"]
    )

    refused = staff_client.post(
        "/admin/mcp_endpoint/outboundendpoint/add/",
        {**form, "name": "hall", "url": f"http://h/?token={TOKEN}"},
    )
    assert refused.status_code == 200 and "must start with wss://" in refused.content.decode()
    assert TOKEN not in refused.content.decode()
    empty = staff_client.post("/admin/mcp_endpoint/outboundendpoint/add/", {**form, "name": "hall"})
    assert "Paste the endpoint URL." in empty.content.decode()
    added = staff_client.post(
        "/admin/mcp_endpoint/outboundendpoint/add/", {**form, "name": "hall", "url": URL}
    )
    assert added.status_code == 302 and OutboundEndpoint.objects.get(name="hall").url == URL
    new_form = staff_client.get("/admin/mcp_endpoint/outboundendpoint/add/").content.decode()
    assert "list_lights_on, set_light_state, get_alarm_status" in new_form  # the default tools


def test_metrics_give_each_endpoints_connection_and_calls(client, db, settings):
    from datetime import timedelta

    settings.METRICS_PUBLIC = True

    from django.utils import timezone

    OutboundEndpoint.objects.create(
        name="kitchen", url=URL, connected=True, held_until=timezone.now() + timedelta(seconds=30), calls=4
    )
    # Connected, by a process whose claim lapsed (it was killed): not connected.
    OutboundEndpoint.objects.create(
        name="hall", url=URL, connected=True, held_until=timezone.now() - timedelta(seconds=1)
    )
    text = client.get("/metrics").content.decode()
    assert 'homehub_mcp_endpoint_connected{endpoint="kitchen"} 1.0' in text
    assert 'homehub_mcp_endpoint_connected{endpoint="hall"} 0.0' in text
    assert 'homehub_mcp_endpoint_calls_total{endpoint="kitchen"} 4.0' in text
    assert TOKEN not in text
