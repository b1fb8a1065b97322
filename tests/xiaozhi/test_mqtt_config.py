"""The OTA answer's `mqtt` section (devices/xiaozhi/mqtt_config.py): absent without
DEVICE_MQTT_ENDPOINT, a password minted each time and kept only as a hash, per-device topics,
the listener's address, and endpoints stock firmware would misread."""

import json

import pytest
from django.core.management import call_command

from audit.models import Event
from devices.agents.models import Agent
from devices.agents.services import register_agent
from devices.xiaozhi.models import MqttCredential
from devices.xiaozhi.mqtt import credentials
from devices.xiaozhi.mqtt.credentials import Address, EndpointError
from devices.xiaozhi.mqtt_config import mqtt_section

MAC = "aa:bb:cc:00:18:10"


@pytest.fixture
def agent(db):
    return register_agent(MAC, transport="ws", actor="test", interface=Event.Interface.SYSTEM)[0]


def test_no_endpoint_no_section(agent, settings):
    settings.DEVICE_MQTT_ENDPOINT = ""
    assert mqtt_section(agent) is None
    assert credentials.listen_address() is None
    assert not MqttCredential.objects.exists()


def test_the_section_stock_firmware_reads(agent, settings):
    settings.DEVICE_MQTT_ENDPOINT = "hub.home.arpa:1883"
    first = mqtt_section(agent)
    second = mqtt_section(agent)
    assert first is not None and second is not None
    assert first == {
        "endpoint": "hub.home.arpa:1883",
        "client_id": "aa_bb_cc_00_18_10",
        "username": "aa_bb_cc_00_18_10",
        "password": first["password"],
        "publish_topic": "devices/up/aa_bb_cc_00_18_10",
        "keepalive": 240,
    }
    assert second["password"] != first["password"] and len(second["password"]) >= 43
    row = MqttCredential.objects.get()
    assert row.password_hash == credentials.hash_password(second["password"])
    assert first["password"] not in json.dumps(list(Event.objects.values("before", "after")))
    identity = credentials.identify(row.client_id, row.client_id, second["password"])
    assert identity is not None and identity.agent_id == MAC
    assert identity.delivery_topic == "devices/p2p/aa_bb_cc_00_18_10"
    assert credentials.identify(row.client_id, row.client_id, first["password"]) is None  # rotated
    assert credentials.identify(row.client_id, "someone", second["password"]) is None
    minted = Event.objects.filter(action="agent.mqtt_credentials").order_by("id")
    assert [(e.actor, e.interface, e.after["rotated"]) for e in minted] == [
        (MAC, "device", False),
        (MAC, "device", True),
    ]


def test_agent_ids_that_read_the_same_get_distinct_client_ids(agent, settings):
    settings.DEVICE_MQTT_ENDPOINT = "192.168.1.10:1883"
    # Such ids are refused at registration now; two from before the rule still get two client ids.
    other = Agent.objects.create(agent_id="aa_bb_cc_00_18_10", approved=True)
    ours, theirs = mqtt_section(agent), mqtt_section(other)
    assert ours is not None and theirs is not None
    assert ours["client_id"] == "aa_bb_cc_00_18_10" and theirs["client_id"].startswith("aa_bb_cc_00_18_10-")


def test_where_the_listener_binds(settings):
    settings.DEVICE_MQTT_ENDPOINT = "hub.home.arpa:1883"
    settings.DEVICE_MQTT_LISTEN = ""
    assert credentials.listen_address() == Address("0.0.0.0", 1883)
    settings.DEVICE_MQTT_LISTEN = "[::1]:11883"
    assert credentials.listen_address() == Address("::1", 11883)


@pytest.mark.parametrize("endpoint", ["hub.home.arpa", "hub.home.arpa:8883", ":1883", "hub:port"])
def test_endpoints_stock_firmware_would_misread_are_refused(agent, settings, endpoint):
    settings.DEVICE_MQTT_ENDPOINT = endpoint
    with pytest.raises(EndpointError):
        mqtt_section(agent)


def test_the_command_prints_a_section(agent, settings, capsys):
    settings.DEVICE_MQTT_ENDPOINT = "hub.home.arpa:1883"
    call_command("device_mqtt_section", MAC)
    section = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert section["client_id"] == "aa_bb_cc_00_18_10"
    assert Event.objects.get(action="agent.mqtt_credentials").interface == "system"
