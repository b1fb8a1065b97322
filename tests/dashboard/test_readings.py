"""Readings in plain words: units and rounding per channel, stale readings, sensor names (the
owner's label or one made from the room), the Sensors page grouped by room, Home's "All lights
off", and charts with round ticks, hover values and presence as bands."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from audit.models import Event
from automations.models import Room, ZoneRoom
from dashboard.charts import line_chart, nice_ticks, tick_text
from dashboard.readings import default_label
from devices.home import services as home_services
from devices.home.models import Light
from devices.telemetry import units
from devices.telemetry.models import Sensor, TelemetryReading
from devices.telemetry.selectors import DEFAULT_INTERVAL, is_stale, usual_interval
from tests.hub_support import create_account
from tests.telemetry_support import store_readings

NOON = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def test_each_channel_reads_in_its_unit_and_rounding():
    assert units.text("temperature", 21.64, "c") == "21.6 °C"
    assert units.text("temperature", 20.0, "c") == "20 °C"
    assert units.text("co2", 812.4, "ppm") == "812 ppm"
    assert units.text("humidity", 45.49, "%") == "45 %"
    assert units.text("presence", 1, "") == "Occupied"
    assert units.text("presence", 0, "") == "Empty"
    assert str(units.channel("co2").name) == "CO₂"
    assert units.text("wind_speed", 3.24, "m/s") == "3.2 m/s"  # not in the table: the device's unit
    assert str(units.channel("wind_speed").name) == "Wind speed"
    assert units.text("outside", 5, "C") == "5 °C"  # a unit spelled as people write it
    assert units.rounded(-0.04, 1) == "0"


def test_a_sensor_is_stale_after_three_of_its_usual_intervals():
    minutely = [NOON - timedelta(minutes=i) for i in range(11)]
    assert usual_interval(minutely) == timedelta(minutes=1)
    assert not is_stale(minutely, NOON + timedelta(minutes=2))
    assert is_stale(minutely, NOON + timedelta(minutes=3, seconds=1))
    assert usual_interval([NOON]) == DEFAULT_INTERVAL  # one reading: the default interval
    assert not is_stale([NOON], NOON + 3 * DEFAULT_INTERVAL)
    assert is_stale([NOON], NOON + 3 * DEFAULT_INTERVAL + timedelta(seconds=1))
    assert not is_stale([], NOON)


def test_a_sensor_is_named_from_its_room_and_channel():
    assert default_label("Salón", "living_room", "temperature") == "Salón temperature"
    assert default_label(None, "living_room", "co2") == "Living room CO₂"


def test_ticks_are_round_numbers():
    assert nice_ticks(20.03, 21.97) == [20, 20.5, 21, 21.5, 22]
    assert nice_ticks(412, 1288) == [400, 600, 800, 1000, 1200, 1400]
    assert [tick_text(v, 0.5) for v in (20, 20.5)] == ["20", "20.5"]


def _series(values, *, every=timedelta(minutes=10), unit=""):
    points = [(NOON - every * (len(values) - 1 - i), v) for i, v in enumerate(values)]
    return {"since": NOON - timedelta(days=1), "until": NOON, "unit": unit, "points": points}


def test_presence_is_drawn_as_occupied_bands_and_values_carry_hover_words():
    chart = line_chart(_series([0, 1, 1, 0, 1]), "day", "Presence", channel="presence")
    assert chart.count('class="band"') == 2  # two occupied stretches, no line
    assert "<polyline" not in chart
    assert "Occupied" in chart and "Empty" in chart  # the hover words
    line = line_chart(_series([20.04, 21.96], unit="c"), "day", "T", channel="temperature")
    assert ">20.5</text>" in line and "<polyline" in line
    assert "· 21.96" not in line and "· 22 °C" in line  # hover values rounded, with the unit


@pytest.fixture
def sensors(home):
    living = Room.objects.get(name="Salón")
    ZoneRoom.objects.create(zone="living_room", room=living)
    now = timezone.now()
    rows = [
        TelemetryReading(
            zone="living_room",
            device_type="sensor",
            device_id="aa:bb:cc:dd:ee:01",
            channel=channel,
            value=value,
            unit=unit,
            measured_at=now - timedelta(minutes=minutes),
        )
        for channel, value, unit, minutes in [
            ("temperature", 21.64, "c", 0),
            ("co2", 640.2, "ppm", 0),
            ("presence", 1, "", 0),
        ]
    ]
    rows += [  # a sensor that reported every minute, then fell silent an hour ago
        TelemetryReading(
            zone="garden",
            device_type="sensor",
            device_id="aa:bb:cc:dd:ee:02",
            channel="humidity",
            value=70,
            unit="%",
            measured_at=now - timedelta(minutes=60 + i),
        )
        for i in range(5)
    ]
    store_readings(rows)


def _login(client, role):
    client.force_login(create_account(f"a-{role}", "pw-for-tests-only", role))
    return client


@pytest.mark.django_db
def test_sensors_page_groups_by_room_in_plain_words(client, sensors):
    html = _login(client, "guest").get("/sensors/").content.decode()
    salon, elsewhere = html.index('data-sensor-group="Salón"'), html.index('data-sensor-group=""')
    assert salon < elsewhere  # the rooms first, what is in no room last
    assert "Salón temperature" in html and '21.6<span class="tile-unit"> °C</span>' in html
    assert "Salón CO₂" in html and '640<span class="tile-unit"> ppm</span>' in html
    assert ">Occupied</span>" in html
    assert "aa:bb:cc" not in html.split("<main")[1].split('href="/sensors/living_room')[0]
    garden = html[html.index('data-sensor="garden/') :]
    assert '<a class="tile is-stale" href="/sensors/garden/' in html
    assert "an hour ago" in garden and "stale" in garden
    assert html.count("is-stale") == 1  # the fresh ones are not


@pytest.mark.django_db
def test_home_shows_every_room_value_and_scenes_one_click_away(client, sensors):
    from automations import services as automations

    automations.save_scene("Movie night", {"salon": False}, [], actor="t", interface="system")
    html = _login(client, "member").get("/").content.decode()
    card = html[html.index('data-room="Salón"') :]
    assert "Salón temperature" in card.split("</section>")[0]
    assert 'data-scene="Movie night"' in html
    assert 'id="all-lights-off"' in html


@pytest.mark.django_db
def test_all_lights_off_switches_each_light_through_the_pipeline(client, home):
    for name in ("salon", "cocina"):
        home_services.set_light_state(name, True, actor="t", interface="system")
    guest = _login(client, "guest")
    response = guest.post("/all-lights-off/")
    assert response.status_code == 302
    assert not Light.objects.filter(on=True).exists()
    events = Event.objects.filter(action="light.set", interface="dashboard", actor="a-guest")
    assert sorted(e.target for e in events) == ["light:cocina", "light:salon"]
    assert guest.post("/all-lights-off/", HTTP_ACCEPT="application/json").json() == {"off": []}


@pytest.mark.django_db
def test_an_owner_names_a_sensor_and_it_is_audited(client, sensors):
    url = "/sensors/living_room/sensor/aa:bb:cc:dd:ee:01/temperature/"
    member = _login(client, "member")
    assert member.post(url + "label/", {"label": "Sofa"}).status_code == 403
    assert Sensor.objects.get(channel="temperature").label == ""
    owner = _login(client, "owner")
    assert 'name="label"' in owner.get(url).content.decode()
    owner.post(url + "label/", {"label": "  Sofa   thermometer "})
    assert Sensor.objects.get(channel="temperature").label == "Sofa thermometer"
    assert "Sofa thermometer" in owner.get("/sensors/").content.decode()
    event = Event.objects.get(action="sensor.label")
    assert (event.actor, event.after) == ("a-owner", {"label": "Sofa thermometer"})
    answer = owner.post(url + "label/", {"label": "x" * 101}, HTTP_ACCEPT="application/json")
    assert answer.status_code == 400 and answer.json()["error"].startswith("label:")
    assert Sensor.objects.get(channel="temperature").label == "Sofa thermometer"
    owner.post(url + "label/", {"label": ""})  # blank: back to the room's name
    assert "Salón temperature" in owner.get("/sensors/").content.decode()


@pytest.mark.django_db
def test_a_label_survives_new_readings(sensors):
    from devices.telemetry import selectors, services

    key = selectors.SensorKey("living_room", "sensor", "aa:bb:cc:dd:ee:01", "temperature")
    services.set_sensor_label(key, "Sofa", actor="t", interface="system")
    store_readings(
        [
            TelemetryReading(
                zone=key.zone,
                device_type=key.device_type,
                device_id=key.device_id,
                channel=key.channel,
                value=23,
                unit="c",
                measured_at=timezone.now(),
            )
        ]
    )
    sensor = Sensor.objects.get(channel="temperature")
    assert (sensor.label, sensor.value) == ("Sofa", 23)
