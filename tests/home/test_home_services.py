"""Services and selectors of the home, against the real database (SQLite or PostgreSQL)."""

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.core.management.base import CommandError

from audit import services as audit_services
from audit.changes import CHANGES_GROUP
from audit.models import Event
from devices.home import selectors, services, state
from devices.home.errors import LightNotFound
from devices.home.models import Alarm, Light, Person

pytestmark = pytest.mark.django_db


def test_seed_home_creates_seed_000_home(home):
    assert list(Light.objects.values_list("name", "on")) == [
        ("salon", False),
        ("cocina", False),
        ("dormitorio", False),
        ("bano", False),
        ("garage", False),
    ]
    assert Alarm.objects.get().armed is False
    assert list(Person.objects.values_list("name", "present")) == [("Carlos", False), ("Ana", False)]


def test_seed_home_twice_gives_the_same_rows(home):
    services.set_light_state("salon", True, actor="t", interface="rest")
    snapshot = (list(Light.objects.values()), list(Person.objects.values()), list(Alarm.objects.values()))
    assert services.seed_home() == {"lights": 0, "people": 0, "alarm": 0}
    assert snapshot == (
        list(Light.objects.values()),
        list(Person.objects.values()),
        list(Alarm.objects.values()),
    )


def test_seed_home_reset_switches_everything_back(home):
    services.set_light_state("salon", True, actor="t", interface="rest")
    services.set_alarm_state(True, actor="t", interface="rest")
    services.seed_home(reset=True)
    assert selectors.get_all_states()["lights"]["salon"] is False
    assert selectors.get_alarm_status() == {"armed": False}
    audited = Event.objects.filter(actor="seed_home", interface="system").order_by("id")
    assert [(e.action, e.target, e.before, e.after) for e in audited][-3:] == [
        ("light.set", "light:salon", {"on": True}, {"on": False}),
        ("alarm.set", "alarm", {"armed": True}, {"armed": False}),
        ("home.seed", "home", None, {"created": {"lights": 0, "people": 0, "alarm": 0}, "reset": True}),
    ]


def test_selectors_have_seed_000_shapes(home):
    assert selectors.get_presence() == {"present": False, "known_people": []}
    assert selectors.get_alarm_status() == {"armed": False}
    assert selectors.list_lights_on() == {"on": []}
    assert selectors.get_all_states() == {
        "lights": {"salon": False, "cocina": False, "dormitorio": False, "bano": False, "garage": False},
        "alarm": False,
        "presence": {"present": False, "known_people": []},
    }


def test_changes_show_in_every_read(home):
    services.set_light_state("salon", True, actor="ana", interface="dashboard")
    services.set_light_state("garage", True, actor="ana", interface="dashboard")
    services.set_alarm_state(True, actor="ana", interface="dashboard")
    services.set_person_presence("Carlos", True, actor="ana", interface="dashboard")
    services.set_person_presence("Ana", True, actor="ana", interface="dashboard")
    assert selectors.list_lights_on() == {"on": ["salon", "garage"]}
    assert selectors.get_presence() == {"present": True, "known_people": ["Carlos", "Ana"]}
    states = selectors.get_all_states()
    assert states["alarm"] is True
    assert states["lights"] == {
        "salon": True,
        "cocina": False,
        "dormitorio": False,
        "bano": False,
        "garage": True,
    }


def test_unknown_light_is_seed_000_spanish_error_and_changes_nothing(home):
    before = Event.objects.count()
    with pytest.raises(LightNotFound) as excinfo:
        services.set_light_state("inexistente", True, actor="x", interface="mcp-stdio")
    assert str(excinfo.value) == "Luz 'inexistente' no encontrada"
    assert Event.objects.count() == before


def test_each_change_writes_an_event_with_actor_and_interface(home):
    services.set_light_state("cocina", True, actor="claude", interface="mcp-http")
    event = Event.objects.first()
    assert (event.actor, event.interface, event.action, event.target) == (
        "claude",
        "mcp-http",
        "light.set",
        "light:cocina",
    )
    assert (event.before, event.after) == ({"on": False}, {"on": True})

    services.set_alarm_state(True, actor="admin", interface="admin")
    event = Event.objects.first()
    assert (event.actor, event.interface, event.target, event.after) == (
        "admin",
        "admin",
        "alarm",
        {"armed": True},
    )


def test_change_is_broadcast_to_home_group_after_commit(home, django_capture_on_commit_callbacks):
    layer = get_channel_layer()
    channel = async_to_sync(layer.new_channel)()
    async_to_sync(layer.group_add)(CHANGES_GROUP, channel)
    try:
        with django_capture_on_commit_callbacks(execute=True) as callbacks:
            services.set_light_state("bano", True, actor="ana", interface="mqtt")
        assert callbacks  # the announcement waits for the commit
        message = async_to_sync(layer.receive)(channel)
    finally:
        async_to_sync(layer.group_discard)(CHANGES_GROUP, channel)
    assert message["type"] == "home.event"
    event = message["event"]
    assert (event["kind"], event["name"], event["on"], event["actor"], event["interface"]) == (
        "light",
        "bano",
        True,
        "ana",
        "mqtt",
    )


def test_failed_change_broadcasts_nothing(home, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks() as callbacks, pytest.raises(LightNotFound):
        services.set_light_state("nope", True, actor="ana", interface="rest")
    assert callbacks == []


def test_async_paths_do_not_block_and_return_the_same(home):
    async def scenario():
        await services.aset_light_state("salon", True, actor="ws", interface="mcp-ws")
        return await state.all_states()

    assert async_to_sync(scenario)()["lights"]["salon"] is True


def test_prune_telemetry_keeps_recent_readings_and_latest_values(db, capsys):
    from datetime import timedelta

    from django.core.management import call_command
    from django.utils import timezone

    from devices.telemetry.models import Sensor, TelemetryReading
    from tests.telemetry_support import store_readings

    now = timezone.now()
    store_readings(
        TelemetryReading(
            zone="z",
            device_type="s",
            device_id="d",
            channel="t",
            value=i,
            measured_at=now - timedelta(days=i),
        )
        for i in range(10)
    )
    call_command("prune_telemetry", "--older-than", "5d")
    assert "Deleted 5 readings" in capsys.readouterr().out  # 5 days and a moment ago, and older
    assert sorted(TelemetryReading.objects.values_list("value", flat=True)) == [0, 1, 2, 3, 4]
    assert Sensor.objects.get().value == 0
    with pytest.raises(CommandError):
        call_command("prune_telemetry", "--older-than", "soon")


def test_latest_value_follows_the_newest_reading_not_the_last_to_arrive(db):
    from datetime import timedelta

    from django.utils import timezone

    from devices.telemetry.models import Sensor, TelemetryReading
    from tests.telemetry_support import store_readings

    now = timezone.now()
    row = dict(zone="z", device_type="s", device_id="d", channel="t")
    store_readings([TelemetryReading(**row, value=2, measured_at=now)])
    store_readings([TelemetryReading(**row, value=1, measured_at=now - timedelta(minutes=1))])  # late
    store_readings([TelemetryReading(**row, value=3, measured_at=now - timedelta(seconds=30))])  # late
    assert Sensor.objects.get().value == 2
    assert TelemetryReading.objects.count() == 3


def test_rejected_messages_are_bounded_oldest_first(db):
    from devices.telemetry import services as telemetry_services
    from devices.telemetry.models import RejectedMessage

    batch = telemetry_services.Batch(rejected=[(f"office/t/{i}", b"x", "bad") for i in range(30)])
    telemetry_services.store_batch(batch)
    assert telemetry_services.prune_rejected(keep=10) == 20
    assert sorted(RejectedMessage.objects.values_list("topic", flat=True)) == sorted(
        f"office/t/{i}" for i in range(20, 30)
    )


def test_prune_events_deletes_only_events_past_the_retention(home, settings, capsys):
    from datetime import timedelta

    from django.core.management import call_command
    from django.utils import timezone

    settings.AUDIT_RETENTION_DAYS = 30
    for days in (40, 31, 29, 1):
        event = audit_services.record_event(
            actor="t", interface="system", action="old.thing", target=f"{days}"
        )
        Event.objects.filter(pk=event.pk).update(at=timezone.now() - timedelta(days=days))
    kept = Event.objects.exclude(action="old.thing").count()
    call_command("prune_events")
    assert "Deleted 2 audit events" in capsys.readouterr().out
    assert sorted(Event.objects.filter(action="old.thing").values_list("target", flat=True)) == ["1", "29"]
    call_command("prune_events", "--older-than", "2d")
    assert list(Event.objects.filter(action="old.thing").values_list("target", flat=True)) == ["1"]
    assert Event.objects.exclude(action="old.thing").count() == kept  # the seed's, just written
    with pytest.raises(CommandError):
        call_command("prune_events", "--older-than", "soon")
