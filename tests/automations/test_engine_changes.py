"""The change feed's events as the changes an automation judges."""

from datetime import UTC, datetime

from automations.engine.changes import changes_from_event, differences
from automations.evaluation import Change, HomeView

AT = "2026-03-02T08:00:00+00:00"
WHEN = datetime(2026, 3, 2, 8, 0, tzinfo=UTC)


def test_each_kind_of_event_becomes_its_change():
    someone = {"actor": "ana", "interface": "dashboard", "at": AT}
    assert changes_from_event({"kind": "light", "name": "salon", "on": True, **someone}, WHEN) == [
        Change("light", "salon", True, WHEN)
    ]
    assert changes_from_event({"kind": "alarm", "armed": False, **someone}, WHEN) == [
        Change("alarm", "", False, WHEN)
    ]
    assert changes_from_event({"kind": "person", "name": "Ana", "present": True, **someone}, WHEN) == [
        Change("presence", "Ana", True, WHEN)
    ]
    assert changes_from_event(
        {"kind": "agent", "agent_id": "esp32_01", "online": False, **someone}, WHEN
    ) == [Change("agent", "esp32_01", False, WHEN)]


def test_a_change_made_by_an_automation_names_it():
    event = {
        "kind": "light",
        "name": "salon",
        "on": False,
        "actor": "automation:Night",
        "interface": "automation",
    }
    assert [c.by for c in changes_from_event(event, WHEN) or []] == ["Night"]
    # Only the automation interface counts: a person named so is not an automation.
    event["interface"] = "dashboard"
    assert [c.by for c in changes_from_event(event, WHEN) or []] == [""]


def test_telemetry_gives_each_sensor_by_zone_and_channel_and_without_values_asks_to_read():
    event = {
        "kind": "telemetry",
        "count": 2,
        "sensors": [
            {"path": "living/sensor/env_01/temperature", "value": 21.5, "unit": "c", "measured_at": AT},
            {"path": "living/sensor/env_01/humidity", "value": 40, "unit": "%", "measured_at": AT},
        ],
    }
    found = changes_from_event(event, WHEN) or []
    assert [(c.kind, c.name, c.value) for c in found] == [
        ("sensor", "living/temperature", 21.5),
        ("sensor", "living/humidity", 40.0),
    ]
    assert changes_from_event({"kind": "telemetry", "count": 900}, WHEN) is None  # too many to carry
    assert changes_from_event({"kind": "home"}, WHEN) is None  # seeded again
    # Agent events that are not about being online, and other kinds, change nothing judged.
    assert changes_from_event({"kind": "agent", "agent_id": "x", "tools": 3}, WHEN) == []
    assert changes_from_event({"kind": "invoice"}, WHEN) == []


def test_differences_between_two_views_are_the_changes():
    before = HomeView(
        lights={"salon": False}, people={"Ana": True}, sensors={"a/t": 20.0}, agents={"x": True}
    )
    after = HomeView(
        lights={"salon": True}, people={"Ana": True}, armed=True, sensors={"a/t": 21.0}, agents={"x": True}
    )
    assert differences(before, after, WHEN) == [
        Change("light", "salon", True, WHEN),
        Change("sensor", "a/t", 21.0, WHEN),
        Change("alarm", "", True, WHEN),
    ]
