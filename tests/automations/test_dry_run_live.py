"""The dry run tells what the live engine did: with a real `serve` (its engine inside) and
automations of four kinds of trigger enabled, changes made through real doors (`mcp_stdio`,
REST with a token, MQTT telemetry) start runs; replaying the same recorded window through
`dry_run` finds the same firings, at the same moments, with the same triggers and conditions."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime, timedelta
from typing import Any

import httpx
import pytest

from automations.dry_run import dry_run
from automations.models import Automation, AutomationRun
from devices.home import services as home_services
from tests.automations.engine_support import automation, runs
from tests.hub_support import running_hub
from tests.mqtt_support import broker, client, publish_all, wait_until, worker_env
from tests.stdio_support import StdioClient

pytestmark = pytest.mark.live

QUICK = {"AUTOMATION_LEASE_SECONDS": "1.5", "PYTHONUNBUFFERED": "1", "MCP_RATE_LIMIT": "0"}
SYSTEM = {"actor": "test", "interface": "system"}
TOLERANCE = timedelta(seconds=1.5)  # a live sensor value counts from when the engine heard it
TEMPERATURE = "office/lab/sensor/env_01/temperature"


def switch(name: str, on: bool) -> dict[str, Any]:
    return {"tool": "set_light_state", "arguments": {"name": name, "on": on}}


def finished(name: str, count: int) -> list[AutomationRun]:
    return wait_until(
        lambda: (found := runs(name)) and len([r for r in found if r.status != "running"]) >= count and found,
        what=f"{count} run(s) of {name}",
    )


def live(run: AutomationRun) -> dict[str, Any]:
    """A live run as the dry run reports a firing."""
    return {
        "at": run.started_at,
        "trigger": run.trigger,
        "conditions": [step for step in run.trace if "condition" in step],
        "ran": run.status != AutomationRun.Status.SKIPPED,
    }


def replayed(firing: dict[str, Any]) -> dict[str, Any]:
    return {key: firing[key] for key in ("trigger", "conditions", "ran")} | {
        "at": datetime.fromisoformat(firing["at"])
    }


def moments(firing: dict[str, Any]) -> list[datetime]:
    """When it fired and, for a `for_seconds` timer, since when the value was held."""
    since = firing["trigger"].get("held_since")
    return [firing["at"], *([datetime.fromisoformat(since)] if since else [])]


def judged(firing: dict[str, Any]) -> dict[str, Any]:
    """All but the moments, which may differ by TOLERANCE."""
    trigger = {key: value for key, value in firing["trigger"].items() if key != "held_since"}
    return {"trigger": trigger, "conditions": firing["conditions"], "ran": firing["ran"]}


def test_the_dry_run_over_the_recorded_window_finds_what_the_engine_did(live_env, make_token, tmp_path):
    automation(
        "Luz",
        [{"type": "light", "name": "salon", "to": "on"}],
        [switch("cocina", True)],
        conditions=[{"type": "presence", "person": "Ana", "is": "home"}],
    )
    automation("Todos fuera", [{"type": "presence", "who": "everyone", "to": "away"}], [{"notify": "nadie"}])
    automation(
        "Alarma",
        [{"type": "alarm", "to": "armed"}],
        [{"notify": "armada"}],
        conditions=[{"type": "light", "name": "salon", "is": "on"}],
    )
    automation(
        "Calor",
        [{"type": "sensor", "zone": "lab", "channel": "temperature", "above": 25, "for_seconds": 2}],
        [switch("garage", True)],
    )
    home_services.set_person_presence("Ana", True, **SYSTEM)
    home_services.set_person_presence("Carlos", True, **SYSTEM)
    rest = httpx.Client(headers={"Authorization": f"Bearer {make_token(('read', 'control'), name='phone')}"})
    with (
        broker(tmp_path / "broker") as mqtt,
        running_hub(worker_env(live_env, mqtt.url), serve=True, **QUICK) as hub,
        rest,
    ):
        wait_until(lambda: Automation.objects.filter(holder="").count() == 0, what="all four held")

        async def switch_through_stdio() -> None:
            async with StdioClient(live_env) as stdio:
                await stdio.call("set_light_state", {"name": "salon", "on": True})

        asyncio.run(switch_through_stdio())
        finished("Luz", 1)
        assert rest.patch(f"{hub.base}/api/alarm", json={"armed": True}).status_code == 200
        finished("Alarma", 1)
        assert rest.patch(f"{hub.base}/api/lights/salon", json={"on": False}).status_code == 200
        for person in ("Ana", "Carlos"):  # the second leaving: everyone is away
            assert rest.patch(f"{hub.base}/api/people/{person}", json={"present": False}).status_code == 200
        finished("Todos fuera", 1)
        assert rest.patch(f"{hub.base}/api/lights/salon", json={"on": True}).status_code == 200
        finished("Luz", 2)  # skipped: Ana is away

        sensors = client(mqtt.url)
        for value in (20, 27, 22, 28):  # 27 is not held for 2 s; 28 is
            publish_all(sensors, [(TEMPERATURE, {"value": value, "unit": "c"})])
            time.sleep(0.5)  # each in a broadcast of its own
        finished("Calor", 1)
        sensors.loop_stop()
        sensors.disconnect()
        time.sleep(1)  # nothing more fires
        output = hub.output()[-3000:]

    end = datetime.now().astimezone()
    expected = {"Luz": ["done", "skipped"], "Todos fuera": ["done"], "Alarma": ["done"], "Calor": ["done"]}
    assert {name: [r.status for r in runs(name)] for name in expected} == expected, output
    for row in Automation.objects.all():
        out = dry_run(row.definition, days=1, now=end)
        live_ones = [live(run) for run in runs(row.name)]
        dry_ones = [replayed(firing) for firing in out["fired"]]
        assert [judged(f) for f in live_ones] == [judged(f) for f in dry_ones], row.name
        apart = [
            abs(a - b)
            for one, other in zip(live_ones, dry_ones, strict=True)
            for a, b in zip(moments(one), moments(other), strict=True)
        ]
        assert max(apart) <= TOLERANCE, (row.name, live_ones, dry_ones)
        assert all(firing["caused_by"] is None for firing in out["fired"])
    (hot,) = runs("Calor")
    assert hot.trigger["value"] == 28 and "held_since" in hot.trigger
