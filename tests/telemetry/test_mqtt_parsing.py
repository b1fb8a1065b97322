"""Telemetry topics and payloads as sensors send them (seed 004), parsed without a broker."""

import time

import pytest

from devices.home.mqtt import CommandError, parse_switch
from devices.soms.link import AnnouncementError, parse_announcement
from devices.telemetry.parsing import Heartbeat, Reading, Rejected, parse

NOW = time.time()
TOPIC = "office/meeting_room_a/sensor/env_01/temperature"


def test_the_seed_payload():
    reading = parse(TOPIC, b'{"value": 24.5, "unit": "c", "timestamp": 1715840000}', NOW)
    assert reading == Reading("meeting_room_a", "sensor", "env_01", "temperature", 24.5, "c", 1715840000.0)


@pytest.mark.parametrize(
    ("payload", "value", "unit", "at"),
    [
        (b'{"value": 0, "unit": "ppm", "timestamp": 1715840000}', 0.0, "ppm", 1715840000.0),  # 0 is a value
        (b'{"value": 1.5, "timestamp": 1715840000123}', 1.5, "", 1715840000.123),  # milliseconds
        (b'{"value": 3}', 3.0, "", NOW),  # no timestamp: the time of receipt
        (b"21.75", 21.75, "", NOW),  # a bare number
        (b'{"value": true}', 1.0, "", NOW),  # presence as a boolean
    ],
)
def test_edge_payloads_are_readings(payload, value, unit, at):
    reading = parse(TOPIC, payload, NOW)
    assert (reading.value, reading.unit) == (value, unit)
    assert reading.measured_at == pytest.approx(at)


@pytest.mark.parametrize(
    ("topic", "payload", "reason"),
    [
        (TOPIC, b"{not json", "not JSON"),
        (TOPIC, b'{"value": 1, "unit": "\xff"}', "not JSON"),  # not UTF-8
        (TOPIC, b'{"unit": "c"}', "no 'value'"),
        (TOPIC, b'{"value": "hot"}', "value is not a number"),
        (TOPIC, b'{"value": NaN}', "not finite"),
        (TOPIC, b'"24.5"', "payload is not a number"),
        (TOPIC, b'{"value": 1, "timestamp": -5}', "timestamp out of range"),
        (TOPIC, b'{"value": 1, "timestamp": 99999999999999999}', "timestamp out of range"),
        (TOPIC, b'{"value": 1, "unit": 5}', "unit is not a string"),
        (TOPIC, b'{"value": 1, "pad": "' + b"x" * 5000 + b'"}', "larger than"),
        ("office/a/b/c", b"1", "topic is not"),
        ("office/a/b/c/d/e", b"1", "topic is not"),
        ("office/a//c/d", b"1", "empty level"),
        ("office/" + "z" * 65 + "/b/c/d", b"1", "longer than 64"),
    ],
)
def test_what_is_not_a_reading_says_why(topic, payload, reason):
    with pytest.raises(Rejected, match=reason):
        parse(topic, payload, NOW)


def test_heartbeat_is_not_a_reading():
    assert parse("office/lab/sensor/env_01/heartbeat", b"", NOW) == Heartbeat("env_01")


def test_announcements():
    seed = parse_announcement(b'{"agent_id": "esp32_01", "capabilities": ["sensor", "light_control"]}')
    assert seed.agent_id == "esp32_01"
    assert seed.details == {"capabilities": ["sensor", "light_control"]}
    assert seed.dialect.call_tool == "call_tool"
    standard = parse_announcement(
        b'{"agent_id": "a", "methods": ["tools/list", "tools/call"], "heartbeat": 5}'
    )
    assert (standard.dialect.call_tool, standard.heartbeat) == ("tools/call", 5.0)
    for bad in (
        b'{"agent_id": "a/b"}',
        b'{"agent_id": "+"}',
        b'{"agent_id": ""}',
        b"[]",
        b"{",
        b'{"agent_id": 5}',
    ):
        with pytest.raises(AnnouncementError):
            parse_announcement(bad)


def test_switch_commands():
    for payload in (b"on", b"ON", b"true", b"1", b'{"on": true}', b"true\n"):
        assert parse_switch(payload, "on") is True
    for payload in (b"off", b"false", b"0", b'{"on": false}'):
        assert parse_switch(payload, "on") is False
    assert parse_switch(b"arm", "armed") is True
    assert parse_switch(b'{"armed": false}', "armed") is False
    for payload in (b"maybe", b'{"on": "x"}', b"2", b"x" * 300):
        with pytest.raises(CommandError):
            parse_switch(payload, "on")
