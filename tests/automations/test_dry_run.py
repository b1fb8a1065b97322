"""The dry run: the recorded past (audit trail, telemetry) replayed through the engine's own
judgement at the moments it happened, reporting each firing, its conditions and what its actions
would have done, changing nothing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from audit.models import Event
from automations.dry_run import FIRINGS_MAX, dry_run
from automations.errors import AutomationError
from automations.history import changes_between
from automations.models import Automation
from automations.services import save_scene
from devices.agents import services as agent_services
from devices.agents.models import Agent
from devices.home import services as home_services
from devices.home.models import Light
from devices.telemetry.models import Sensor, TelemetryReading

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)  # a Friday


def at(**ago: float) -> datetime:
    return NOW - timedelta(**ago)


def happened(
    when: datetime, change: Any, *args: Any, actor: str = "ana", interface: str = "dashboard"
) -> None:
    """Make a change through the home's service, recorded as made at `when`."""
    change(*args, actor=actor, interface=interface)
    Event.objects.filter(pk=Event.objects.latest("id").pk).update(at=when)


def reading(when: datetime, value: float, zone: str = "living", channel: str = "temp") -> None:
    TelemetryReading.objects.create(
        zone=zone, device_type="t", device_id="1", channel=channel, value=value, measured_at=when
    )
    Sensor.objects.update_or_create(
        zone=zone,
        device_type="t",
        device_id="1",
        channel=channel,
        defaults={"value": value, "measured_at": when},
    )


def test_a_light_trigger_fires_when_it_happened_with_its_conditions_judged_then(home):
    happened(at(days=4), home_services.set_person_presence, "Ana", True)
    happened(at(days=3), home_services.set_light_state, "salon", True)
    happened(at(days=3) + timedelta(hours=1), home_services.set_light_state, "salon", False)
    happened(at(days=2), home_services.set_person_presence, "Ana", False)
    happened(at(days=1), home_services.set_light_state, "salon", True)
    data = {
        "name": "Salon on while Ana is home",
        "triggers": [{"type": "light", "name": "salon", "to": "on"}],
        "conditions": [{"type": "presence", "person": "Ana", "is": "home"}],
        "actions": [
            {"tool": "set_light_state", "arguments": {"name": "cocina", "on": True}},
            {"notify": "salon is on", "level": "warning"},
        ],
    }
    out = dry_run(data, days=7, now=NOW, scopes=frozenset({"read"}))
    assert out["changes_replayed"] == 5 and not out["truncated"]
    assert [(f["at"], f["ran"]) for f in out["fired"]] == [
        (at(days=3).isoformat(), True),
        (at(days=1).isoformat(), False),
    ]
    first, second = out["fired"]
    assert first["conditions"][0]["ok"] and first["conditions"][0]["why"] == "home: Ana"
    assert first["actions"] == [
        {
            "kind": "tool",
            "tool": "set_light_state",
            "arguments": {"name": "cocina", "on": True},
            "allowed": False,
        },
        {"kind": "notify", "notify": "salon is on", "title": None, "level": "warning"},
    ]
    assert second["conditions"][0]["why"] == "home: nobody" and second["actions"] == []
    # a window starting after Ana came home sees her home from its start (the state rewound)
    view, changes = changes_between(at(days=3, hours=12), NOW)
    assert view.people["Ana"] is True and view.lights["salon"] is False and len(changes) == 4


def test_a_sensor_held_for_seconds_fires_once_it_held_and_not_when_it_left_before(home):
    reading(at(hours=3), 20)
    reading(at(minutes=90), 31)
    reading(at(minutes=80), 32)
    reading(at(minutes=50), 20)
    reading(at(minutes=40), 31)
    reading(at(minutes=30), 20)
    data = {
        "name": "Hot for half an hour",
        "triggers": [
            {"type": "sensor", "zone": "living", "channel": "temp", "above": 30, "for_seconds": 1800}
        ],
        "actions": [{"notify": "hot"}],
    }
    out = dry_run(data, days=1, now=NOW)
    assert [f["at"] for f in out["fired"]] == [at(minutes=60).isoformat()]
    assert out["fired"][0]["trigger"]["value"] == 32 and out["changes_replayed"] == 6


def test_cron_moments_fall_where_the_schedule_puts_them_and_time_conditions_judge_them(home):
    data = {
        "name": "Morning",
        "triggers": [{"type": "time", "cron": "0 6 * * *"}],
        "conditions": [{"type": "time", "weekdays": ["mon", "tue", "wed", "thu", "fri"]}],
        "actions": [{"delay_seconds": 5}],
    }
    out = dry_run(data, days=3, now=NOW)
    assert [(f["at"], f["ran"]) for f in out["fired"]] == [
        ("2026-11-18T06:00:00+00:00", True),
        ("2026-11-19T06:00:00+00:00", True),
        ("2026-11-20T06:00:00+00:00", True),
    ]
    weekend = dry_run(data, days=7, now=NOW)
    assert [
        f["ran"] for f in weekend["fired"] if f["at"].startswith(("2026-11-14", "2026-11-15", "2026-11-16"))
    ] == [False, False, True]  # Saturday, Sunday, Monday
    assert weekend["fired"][0]["actions"] == [] and weekend["fired"][-1]["actions"] == [
        {"kind": "delay", "delay_seconds": 5.0}
    ]


def test_changes_made_by_automations_are_marked(home):
    happened(
        at(hours=5),
        home_services.set_light_state,
        "salon",
        True,
        actor="automation:Evening",
        interface="automation",
    )
    save_scene(
        "calm",
        {"cocina": False},
        [{"tool": "set_alarm_state", "arguments": {"armed": True}}],
        actor="a",
        interface="rest",
    )
    data = {
        "name": "Chain",
        "triggers": [{"type": "light", "name": "salon", "to": "on"}],
        "actions": [{"scene": "calm"}],
    }
    out = dry_run(data, days=1, now=NOW)
    assert out["automation_changes"] == 1
    (fired,) = out["fired"]
    assert fired["caused_by"] == "Evening"
    assert fired["actions"] == [
        {
            "kind": "scene",
            "scene": "calm",
            "steps": [
                {"tool": "set_light_state", "arguments": {"name": "cocina", "on": False}},
                {"tool": "set_alarm_state", "arguments": {"armed": True}},
            ],
        }
    ]


def test_the_work_is_bounded_and_nothing_changes(home):
    happened(at(hours=2), home_services.set_light_state, "salon", True)
    events, lights = Event.objects.count(), list(Light.objects.values_list("name", "on"))
    every_minute = {
        "name": "Busy",
        "triggers": [{"type": "time", "cron": "* * * * *"}],
        "actions": [{"notify": "x"}],
    }
    out = dry_run(every_minute, days=1, now=NOW)
    assert len(out["fired"]) == FIRINGS_MAX and out["truncated"]
    with pytest.raises(AutomationError, match="days: must be 1 to 31"):
        dry_run(every_minute, days=32, now=NOW)
    assert Event.objects.count() == events and list(Light.objects.values_list("name", "on")) == lights
    assert not Automation.objects.exists()


def test_agents_coming_and_going_and_the_alarm_are_read_from_the_audit_trail(home, settings):
    settings.HOMEHUB_LOCATION = "40.4,-3.7"
    Agent.objects.create(agent_id="esp-1", name="ESP", approved=True)
    happened(at(days=2), home_services.set_alarm_state, True)
    agent_services.agent_connected("esp-1", "s1", {})
    Event.objects.filter(pk=Event.objects.latest("id").pk).update(at=at(hours=10))
    agent_services.agent_disconnected("esp-1", "s1")
    Event.objects.filter(pk=Event.objects.latest("id").pk).update(at=at(hours=2))
    data = {
        "name": "Device lost while armed",
        "triggers": [
            {"type": "agent", "agent": "esp-1", "to": "offline"},
            {"type": "sun", "event": "sunrise"},
        ],
        "conditions": [{"type": "alarm", "armed": True}],
        "actions": [{"notify": "esp-1 went away"}],
    }
    out = dry_run(data, days=1, now=NOW)
    fired = [(f["trigger"]["type"], f["ran"]) for f in out["fired"]]
    assert fired == [("sun", True), ("agent", True)]  # sunrise in Madrid, then the device left
    assert out["fired"][1]["at"] == at(hours=2).isoformat()
    assert out["fired"][0]["at"].startswith("2026-11-20T")
