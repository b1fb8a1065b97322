"""Stock xiaozhi firmware's OTA exchanges with the hub: an unknown device gets a code, polls
`activate` (202) until the owner binds it (200), then gets its WebSocket URL and a device token;
expired, wrong and used codes, replayed answers, unbinding, a reset device, bad requests."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from audit.models import Event
from devices.agents.models import Agent
from devices.agents.services import admit_device, agent_connected
from devices.xiaozhi import services
from devices.xiaozhi.models import Activation
from devices.xiaozhi.services import PairingError, pair, unbind
from tests.xiaozhi_ota_support import CLIENT_ID, MAC, SERIAL, activate, answer_to, check_in, headers

pytestmark = pytest.mark.django_db


def _code(client, **kwargs) -> dict:
    answer = check_in(client, **kwargs)
    assert answer.status_code == 200, answer.content
    return answer.json()["activation"]


def _pair(code: str) -> Activation:
    return pair(code, actor="owner", interface=Event.Interface.DASHBOARD)


def test_an_unknown_device_gets_a_code_and_the_same_one_until_it_expires(client):
    first = check_in(client)
    assert first.status_code == 200 and first["Content-Type"] == "application/json"
    answer = first.json()
    activation = answer["activation"]
    assert set(answer) == {"server_time", "firmware", "activation"}  # no configuration yet
    assert len(activation["code"]) == 6 and activation["code"].isdigit()
    assert activation["code"] in activation["message"] and activation["challenge"]
    assert 599_000 < activation["timeout_ms"] <= 600_000
    assert answer["firmware"] == {"version": "1.6.2", "url": ""}  # its own version: no update
    now_ms = timezone.now().timestamp() * 1000
    assert abs(answer["server_time"]["timestamp"] - now_ms) < 5000
    assert answer["server_time"]["timezone_offset"] == 0
    again = _code(client)
    assert (again["code"], again["challenge"]) == (activation["code"], activation["challenge"])
    row = Activation.objects.get()
    assert (row.device_id, row.client_id, row.state) == (MAC, CLIENT_ID, "pending")
    assert row.board == {"type": "bread-compact-wifi", "name": "bread-compact-wifi"}
    assert (
        row.firmware == {"name": "xiaozhi", "version": "1.6.2"}
        and row.system_info["chip_model_name"] == "esp32s3"
    )
    event = Event.objects.get(action="xiaozhi.activation")  # once, not at every check-in
    assert (event.actor, event.interface, event.target) == (MAC, "device", f"device:{MAC}")
    assert activation["code"] not in json.dumps(event.after)  # the code is not in the audit trail
    assert not Agent.objects.exists()


def test_unknown_code_bind_configuration(client):
    """The whole exchange, as stock firmware goes through it."""
    code = _code(client, serial=SERIAL)
    challenge = Activation.objects.get().challenge
    assert activate(client, answer_to(challenge), serial=SERIAL).status_code == 202
    assert activate(client, answer_to(challenge), serial=SERIAL).status_code == 202  # it polls every 3 s

    row = _pair(code["code"])
    assert row.state == "bound" and row.answer == answer_to(challenge) and row.answered_at is not None
    agent = Agent.objects.get(agent_id=MAC)
    assert agent.connects_on_demand and agent.approved and agent.transport == "ws"
    assert agent.name == "xiaozhi bread-compact-wifi" and not agent.token_hash  # no token until it checks in

    bound = activate(client, answer_to(challenge), serial=SERIAL)
    assert bound.status_code == 200 and bound.json()["status"] == "bound"
    answer = check_in(client, serial=SERIAL).json()
    assert "activation" not in answer and "mqtt" not in answer  # device MQTT is not configured
    websocket = answer["websocket"]
    assert websocket["url"] == "ws://testserver/ws/devices/"
    assert admit_device(MAC, websocket["token"], accept_unknown=False) == agent

    actions = list(Event.objects.order_by("id").values_list("action", "interface", "actor"))
    assert actions == [
        ("xiaozhi.activation", "device", MAC),
        ("xiaozhi.answer", "device", MAC),  # recorded once
        ("agent.register", "dashboard", "owner"),
        ("xiaozhi.pair", "dashboard", "owner"),
        ("agent.token", "device", MAC),
    ]
    assert Event.objects.get(action="xiaozhi.answer").after == {
        "algorithm": "hmac-sha256",
        "serial_number": SERIAL,
    }
    agent.refresh_from_db()
    assert agent.last_seen is not None  # reachable: it checked in


def test_the_token_is_handed_out_only_shortly_after_binding(client):
    _pair(_code(client)["code"])
    first = check_in(client).json()["websocket"]["token"]
    second = check_in(client).json()["websocket"]["token"]  # the first answer may have been lost
    assert first != second
    assert admit_device(MAC, first, accept_unknown=False) is None
    assert admit_device(MAC, second, accept_unknown=False) is not None
    Activation.objects.update(
        token_handed_at=timezone.now() - timedelta(seconds=services.TOKEN_HANDOUT_SECONDS)
    )
    later = check_in(client).json()["websocket"]
    assert later == {"url": "ws://testserver/ws/devices/"}  # the stored token stays the device's
    assert admit_device(MAC, second, accept_unknown=False) is not None
    other = check_in(client, client_id="someone-else").json()
    assert "websocket" not in other and "activation" in other  # the MAC alone gets no token


def test_expired_wrong_malformed_and_used_codes(client):
    code = _code(client)["code"]
    with pytest.raises(PairingError, match="No device is showing code"):
        _pair(f"{(int(code) + 1) % 1_000_000:06d}")
    with pytest.raises(PairingError, match="6 digits"):
        _pair("12345")
    Activation.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    with pytest.raises(PairingError, match=f"Code {code} has expired"):
        _pair(code)
    expired = activate(client)
    assert expired.status_code == 410 and "expired" in expired.json()["error"]
    fresh = _code(client)["code"]
    assert fresh != code  # a new code, never an expired one's
    _pair(f" {fresh[:3]} {fresh[3:]} ")  # as people type it
    with pytest.raises(PairingError, match=f"Code {fresh} was already used: device {MAC} was added"):
        _pair(fresh)
    assert Event.objects.filter(action="xiaozhi.pair").count() == 1


def test_replayed_and_bad_answers_to_the_challenge(client):
    _code(client, serial=SERIAL)
    challenge = Activation.objects.get().challenge
    stale = activate(client, answer_to("an older code's challenge"), serial=SERIAL)
    assert stale.status_code == 409 and "not the one this device was given" in stale.json()["error"]
    assert activate(client, answer_to(challenge), serial=SERIAL).status_code == 202
    changed = {**answer_to(challenge), "hmac": "ab" * 32}
    replay = activate(client, changed, serial=SERIAL)
    assert replay.status_code == 409 and "answered its challenge differently" in replay.json()["error"]
    wrong_serial = activate(client, answer_to(challenge, serial="another"), serial=SERIAL)
    assert wrong_serial.status_code == 400
    bad = activate(client, {**answer_to(challenge), "hmac": "not hex"}, serial=SERIAL)
    assert bad.status_code == 400 and "hmac-sha256" in bad.json()["error"]
    never = activate(client, mac="d8:3b:da:99:99:99")
    assert never.status_code == 404 and "no activation code" in never.json()["error"]
    assert Event.objects.filter(action="xiaozhi.answer").count() == 1


def test_unbinding_revokes_the_token_and_the_device_asks_again(client):
    _pair(_code(client)["code"])
    token = check_in(client).json()["websocket"]["token"]
    assert unbind(MAC, actor="owner", interface=Event.Interface.ADMIN)
    assert not unbind(MAC, actor="owner", interface=Event.Interface.ADMIN)  # not bound any more
    assert admit_device(MAC, token, accept_unknown=False) is None
    gone = activate(client)
    assert gone.status_code == 410 and "unbound" in gone.json()["error"]
    again = check_in(client).json()
    assert "websocket" not in again and again["activation"]["code"]
    assert activate(client).status_code == 202
    assert [e.action for e in Event.objects.filter(interface="admin").order_by("id")] == [
        "agent.revoke",
        "xiaozhi.unbind",
    ]
    agent = Agent.objects.get(agent_id=MAC)  # kept, with its history
    assert not agent.connects_on_demand  # it does not connect at all any more
    _pair(again["activation"]["code"])
    assert Agent.objects.get(agent_id=MAC).connects_on_demand


def test_a_reset_device_is_added_again_and_its_old_binding_ends(client):
    _pair(_code(client)["code"])
    old_token = check_in(client).json()["websocket"]["token"]
    Agent.objects.filter(agent_id=MAC).update(name="Kitchen speaker")
    # Its settings were erased: a new Client-Id, the same MAC.
    code = _code(client, client_id="new-uuid")["code"]
    _pair(code)
    assert admit_device(MAC, old_token, accept_unknown=False) is None
    assert check_in(client, client_id="new-uuid").json()["websocket"]["token"]
    assert "activation" in check_in(client).json()  # the old Client-Id is not bound any more
    assert Agent.objects.get(agent_id=MAC).name == "Kitchen speaker"  # the owner's name stays
    assert Event.objects.filter(action="xiaozhi.pair").order_by("id").last().before == {
        "ended_bindings": [CLIENT_ID]
    }


def test_pair_device_command(client):
    code = _code(client)["code"]
    with pytest.raises(CommandError, match="No device is showing code"):
        call_command("pair_device", "000000" if code != "000000" else "000001")
    call_command("pair_device", code, "--name", "Living room")
    agent = Agent.objects.get(agent_id=MAC)
    assert agent.name == "Living room" and agent.connects_on_demand
    assert Event.objects.get(action="xiaozhi.pair").interface == "system"


def test_bad_requests_get_clear_errors(client, settings):
    missing = client.post("/xiaozhi/ota/", "{}", content_type="application/json")
    assert missing.status_code == 400 and "Device-Id" in missing.json()["error"]
    not_json = client.post("/xiaozhi/ota/", "{", content_type="application/json", **headers())
    assert not_json.status_code == 400 and "JSON" in not_json.json()["error"]
    a_list = client.post("/xiaozhi/ota/", "[]", content_type="application/json", **headers())
    assert a_list.status_code == 400
    spaced = client.post("/xiaozhi/ota/", "{}", content_type="application/json", **headers(mac="a b"))
    assert spaced.status_code == 400
    settings.DEVICE_MAX_MESSAGE_BYTES = 100
    large = check_in(client)
    assert large.status_code == 413 and "100 bytes" in large.json()["error"]
    assert client.put("/xiaozhi/ota/", **headers()).status_code == 405
    assert client.get("/xiaozhi/ota/activate", **headers()).status_code == 405
    assert not Activation.objects.exists()


def test_a_check_in_without_a_body_and_the_urls_it_may_use(client, settings):
    answer = client.get("/xiaozhi/ota/", **headers()).json()  # firmware with no body sends GET
    assert answer["activation"]["code"] and answer["firmware"]["version"] == "1.6.2"  # from User-Agent
    assert client.post("/xiaozhi/ota", "", content_type="application/json", **headers()).status_code == 200
    _pair(answer["activation"]["code"])
    secure = client.post("/xiaozhi/ota/", "", content_type="application/json", secure=True, **headers())
    assert secure.json()["websocket"]["url"] == "wss://testserver/ws/devices/"
    settings.DEVICE_WEBSOCKET_URL = "wss://hub.example.org/ws/devices/"
    assert check_in(client).json()["websocket"]["url"] == "wss://hub.example.org/ws/devices/"


def test_server_time_in_the_hubs_time_zone(client, settings):
    settings.TIME_ZONE = "America/Guatemala"
    assert check_in(client).json()["server_time"]["timezone_offset"] == -360


def test_devices_waiting_to_be_added_are_bounded_per_address_and_in_all(client, settings):
    settings.DEVICE_PENDING_ACTIVATIONS_MAX = 3
    settings.DEVICE_PENDING_ACTIVATIONS_PER_ADDRESS = 2
    busy = {"REMOTE_ADDR": "2001:db8:1:2::10"}
    for n in range(4):  # one /64 checks in as four devices: two codes wait, the oldest expired
        assert check_in(client, mac=f"d8:3b:da:00:00:0{n}", **busy).status_code == 200
    from_busy = Activation.objects.filter(address="2001:db8:1:2::/64")
    assert [row.state for row in from_busy.order_by("id")] == ["expired", "expired", "pending", "pending"]
    other = {"REMOTE_ADDR": "2001:db8:1:2::99"}  # another address of the same /64 counts the same
    assert check_in(client, mac="d8:3b:da:00:00:05", **other).status_code == 200
    assert from_busy.filter(expires_at__gt=timezone.now()).count() == 2
    for n in range(2):  # in all: a new device gets a code, the oldest waiting one expires
        assert check_in(client, mac=f"d8:3b:da:00:01:0{n}", REMOTE_ADDR=f"192.0.2.{n}").status_code == 200
    assert check_in(client, REMOTE_ADDR="198.51.100.7").status_code == 200  # the real device
    waiting = Activation.objects.filter(expires_at__gt=timezone.now())
    assert waiting.count() == 3 and waiting.filter(device_id=MAC).exists()
    again = check_in(client, REMOTE_ADDR="198.51.100.7").json()["activation"]  # it keeps its code
    assert again["code"] == waiting.get(device_id=MAC).code
    Activation.objects.update(expires_at=timezone.now() - timedelta(days=2))
    assert check_in(client, mac="d8:3b:da:00:00:09").status_code == 200
    assert Activation.objects.count() == 1  # codes expired long ago are forgotten


def test_once_the_device_connected_a_replayed_check_in_gets_no_token(client):
    """MAC and Client-Id are no secret (a device says them to anyone on its network): within the
    hand-out window, a check-in naming them got a fresh token, which replaced the device's."""
    _pair(_code(client)["code"])
    token = check_in(client).json()["websocket"]["token"]
    assert admit_device(MAC, token, accept_unknown=False) is not None
    agent_connected(MAC, "session-1", {"client_id": CLIENT_ID})  # its WebSocket's hello
    replayed = check_in(client).json()
    assert replayed["websocket"] == {"url": "ws://testserver/ws/devices/"}  # well within the window
    assert admit_device(MAC, token, accept_unknown=False) is not None  # still the device's


def test_once_the_device_connected_over_mqtt_a_replayed_check_in_gets_no_credentials(client, settings):
    settings.DEVICE_MQTT_ENDPOINT = "hub.example:1884"
    _pair(_code(client)["code"])
    first = check_in(client).json()
    assert first["mqtt"]["password"] and first["websocket"]["token"]
    # What the device listener records when the device connects with those credentials.
    agent_connected(MAC, "mqtt-session", {"transport": "mqtt", "client_id": first["mqtt"]["client_id"]})
    replayed = check_in(client).json()
    assert "mqtt" not in replayed and "token" not in replayed["websocket"]


def test_with_device_mqtt_the_answer_carries_the_mqtt_section_only_when_the_token_goes(client, settings):
    settings.DEVICE_MQTT_ENDPOINT = "hub.example:1884"
    assert "mqtt" not in check_in(client).json()  # unknown: a code, no credentials
    _pair(_code(client)["code"])
    first = check_in(client).json()
    section = first["mqtt"]
    assert section["endpoint"] == "hub.example:1884" and section["password"] and section["publish_topic"]
    assert "token" in first["websocket"]  # both transports offered; stock firmware prefers MQTT
    Activation.objects.update(
        token_handed_at=timezone.now() - timedelta(seconds=services.TOKEN_HANDOUT_SECONDS)
    )
    assert "mqtt" not in check_in(client).json()  # later check-ins: the device keeps what it stored
