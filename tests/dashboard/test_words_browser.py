"""Plain words in a real Chromium, at desktop and phone size: Home in rooms with their values
in units, a scene and "All lights off" one click away, the Sensors page grouped by room, a
chart's hover value and presence drawn as bands. Screenshots in artifacts/screenshots/."""

from __future__ import annotations

from datetime import timedelta

from tests.dashboard.test_dashboard_browser import (  # noqa: F401 (fixtures)
    SHOTS,
    browser,
    csp_violations,
    log_in,
    owner,
    pytestmark,
    seed_telemetry_and_agent,
    wait_until,
)

SIZES = {
    "desktop": {"viewport": {"width": 1280, "height": 900}},
    "phone": {"viewport": {"width": 375, "height": 812}, "device_scale_factor": 2, "is_mobile": True},
}


def _presence() -> None:
    from django.utils import timezone

    from devices.telemetry.models import TelemetryReading
    from tests.telemetry_support import store_readings

    now = timezone.now()
    store_readings(
        [
            TelemetryReading(
                zone="salon",
                device_type="sensor",
                device_id="esp32-salon",
                channel="presence",
                value=1 if 18 <= (now - timedelta(minutes=30 * i)).hour < 23 else 0,
                measured_at=now - timedelta(minutes=30 * i),
            )
            for i in range(48)
        ]
    )


def test_home_in_rooms_sensors_by_room_and_charts_in_plain_words(daphne_server, owner, browser):  # noqa: F811
    from devices.home.models import Light

    base = daphne_server
    seed_telemetry_and_agent()
    _presence()
    for size, options in SIZES.items():
        context = browser.new_context(**options)
        page = context.new_page()
        violations = csp_violations(page)
        log_in(page, base)

        salon = page.locator('[data-room="Salón"]')
        assert "Salón temperature" in salon.inner_text() and "°C" in salon.inner_text()
        assert "Occupied" in salon.inner_text() or "Empty" in salon.inner_text()
        page.locator('[data-scene="Cena"]').click()  # a scene, one click away
        page.wait_for_url(base + "/")
        assert wait_until(lambda: Light.objects.get(name="salon").on and Light.objects.get(name="cocina").on)
        assert page.locator('[data-light="salon"]').get_attribute("aria-checked") == "true"
        page.screenshot(path=str(SHOTS / f"{size}-home-rooms-scene.png"), full_page=True)
        page.get_by_role("button", name="All lights off").click()
        page.wait_for_url(base + "/")
        assert not Light.objects.filter(on=True).exists()
        assert page.locator('[role=switch][aria-checked="true"]').count() == 0
        page.screenshot(path=str(SHOTS / f"{size}-home-all-lights-off.png"), full_page=True)

        page.goto(base + "/sensors/")
        groups = page.locator("[data-sensor-group]").evaluate_all(
            "els => els.map(e => e.dataset.sensorGroup)"
        )
        assert groups[:3] == ["Salón", "Cocina", "Garage"]
        assert "CO₂" in page.locator('[data-sensor-group="Garage"]').inner_text()
        page.screenshot(path=str(SHOTS / f"{size}-sensors-by-room.png"), full_page=True)

        page.goto(base + "/sensors/salon/sensor/esp32-salon/temperature/?range=day")
        chart = page.locator("svg.chart:visible")
        box = chart.bounding_box()
        page.mouse.move(box["x"] + box["width"] * 0.6, box["y"] + box["height"] * 0.5)
        hover = chart.locator(".hover-text")
        hover.wait_for(state="visible")
        assert "°C" in hover.text_content()
        page.screenshot(path=str(SHOTS / f"{size}-chart-hover.png"), full_page=True)

        page.goto(base + "/sensors/salon/sensor/esp32-salon/presence/?range=day")
        assert page.locator("svg.chart:visible rect.band").count() >= 1
        assert page.locator("svg.chart:visible polyline").count() == 0
        page.screenshot(path=str(SHOTS / f"{size}-presence-bands.png"), full_page=True)
        assert violations == [], f"the Content-Security-Policy blocked something at {size} size"
        context.close()
