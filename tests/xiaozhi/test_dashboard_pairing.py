"""The Devices page's "Add a device" (type the code a stock xiaozhi device shows) and its
Unbind button, audited as `dashboard` with the user's name; and the admin's unbind action."""

from __future__ import annotations

import pytest
from django.test import Client

from audit.models import Event
from devices.agents.models import Agent
from devices.xiaozhi.models import Activation
from tests.xiaozhi_ota_support import MAC, check_in


@pytest.fixture
def code(client, db) -> str:
    return check_in(client).json()["activation"]["code"]


def test_the_page_offers_to_add_a_device_with_the_ota_url(staff_client):
    html = staff_client.get("/devices/").content.decode()
    assert "Add a device" in html and 'name="code"' in html
    assert "http://testserver/xiaozhi/ota/" in html


def test_adding_a_device_by_its_code(staff_client, code):
    page = staff_client.post("/devices/add/", {"code": code, "name": "Kitchen speaker"}, follow=True)
    html = page.content.decode()
    assert f"Device {MAC} added" in html
    assert "Kitchen speaker" in html and "Stock xiaozhi device (bread-compact-wifi, firmware 1.6.2)" in html
    assert "Connects when spoken to" in html and ">Yes, unbind it</button>" in html
    event = Event.objects.get(action="xiaozhi.pair")
    assert (event.actor, event.interface) == ("boss", "dashboard")
    again = staff_client.post("/devices/add/", {"code": code}, HTTP_ACCEPT="application/json")
    assert again.status_code == 400 and "was already used" in again.json()["error"]


def test_wrong_and_malformed_codes_say_why(staff_client, code):
    wrong = "000000" if code != "000000" else "000001"
    page = staff_client.post("/devices/add/", {"code": wrong}, follow=True).content.decode()
    assert f"No device is showing code {wrong}" in page
    malformed = staff_client.post("/devices/add/", {"code": "12ab"}, HTTP_ACCEPT="application/json")
    assert malformed.status_code == 400 and "6 digits" in malformed.json()["error"]
    assert not Agent.objects.exists()


def test_unbinding_from_the_page(staff_client, client, code):
    staff_client.post("/devices/add/", {"code": code})
    token = check_in(client).json()["websocket"]["token"]
    assert token
    page = staff_client.post("/devices/unbind/", {"agent_id": MAC}, follow=True).content.decode()
    assert f"Device {MAC} unbound" in page and "Unbound" in page and ">Yes, unbind it</button>" not in page
    assert not Agent.objects.get(agent_id=MAC).token_hash
    assert [
        (e.action, e.actor, e.interface) for e in Event.objects.filter(interface="dashboard").order_by("id")
    ][-2:] == [("agent.revoke", "boss", "dashboard"), ("xiaozhi.unbind", "boss", "dashboard")]
    again = staff_client.post("/devices/unbind/", {"agent_id": MAC}, HTTP_ACCEPT="application/json")
    assert again.status_code == 400 and "is not bound" in again.json()["error"]


def test_the_forms_need_a_login_and_a_post(staff_client, code):
    assert Client().post("/devices/add/", {"code": code}).status_code == 302  # to the login page
    assert staff_client.get("/devices/add/").status_code == 405
    assert not Agent.objects.exists()


def test_unbinding_from_the_admin(staff_client, code):
    staff_client.post("/devices/add/", {"code": code})
    row = Activation.objects.get()
    listing = staff_client.get("/admin/xiaozhi/activation/").content.decode()
    assert MAC in listing and "bound" in listing
    detail = staff_client.get(f"/admin/xiaozhi/activation/{row.pk}/change/").content.decode()
    assert code not in detail  # the code is the owner's proof of holding the device
    staff_client.post(
        "/admin/xiaozhi/activation/", {"action": "unbind", "_selected_action": [row.pk]}, follow=True
    )
    row.refresh_from_db()
    assert row.state == "unbound" and row.unbound_by == "boss"
    assert Event.objects.filter(action="xiaozhi.unbind", interface="admin").exists()


def test_removing_a_bound_device_ends_its_binding(staff_client, client, code):
    staff_client.post("/devices/add/", {"code": code})
    page = staff_client.post("/devices/remove/", {"agent_id": MAC}, follow=True).content.decode()
    assert f"Device {MAC} removed" in page and "Stock xiaozhi device" not in page
    assert not Agent.objects.filter(agent_id=MAC).exists()
    bound = Activation.objects.filter(device_id=MAC, bound_at__isnull=False, unbound_at__isnull=True)
    assert not bound.exists()
    assert [e.action for e in Event.objects.filter(interface="dashboard").order_by("id")][-2:] == [
        "agent.remove",
        "xiaozhi.unbind",
    ]
    assert "activation" in check_in(client).json()  # at its next start it shows a new code
