"""The engine in real hub processes: every kind of change fires what it should, whichever
process made it; a real cron minute; a killed holder taken over; a loop stopped."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime

import pytest

from automations.models import Automation, AutomationRun
from devices.agents.models import Agent
from devices.agents.services import agent_connected, agent_disconnected
from devices.home import selectors as home_reads
from devices.home import services as home_services
from tests.automations.engine_support import automation, runs
from tests.hub_support import running_hub
from tests.mqtt_support import Process, broker, client, publish_all, wait_until, worker_env
from tests.stdio_support import StdioClient

pytestmark = pytest.mark.live

QUICK = {"AUTOMATION_LEASE_SECONDS": "1.5", "PYTHONUNBUFFERED": "1"}
SYSTEM = {"actor": "test", "interface": "system"}


def light(name: str) -> dict:
    return {"tool": "set_light_state", "arguments": {"name": name, "on": True}}


def note(text: str) -> dict:
    return {"notify": text}


def done(name: str, count: int = 1) -> list[AutomationRun]:
    found = wait_until(
        lambda: len([r for r in runs(name) if r.status != "running"]) >= count and runs(name),
        what=f"{count} run(s) of {name}",
    )
    return list(found)


def held(name: str) -> str:
    return wait_until(lambda: Automation.objects.get(name=name).holder, what=f"{name} held")


def test_each_kind_of_change_fires_its_automation_whichever_process_makes_it(live_env, tmp_path):
    automation("Luz", [{"type": "light", "name": "salon", "to": "on"}], [light("cocina")])
    automation("Alarma", [{"type": "alarm", "to": "armed"}], [note("armada")])
    automation("Todos fuera", [{"type": "presence", "who": "everyone", "to": "away"}], [note("nadie")])
    automation("Alguien llega", [{"type": "presence", "who": "anyone", "to": "home"}], [note("hola")])
    automation("Ana llega", [{"type": "presence", "person": "Ana", "to": "home"}], [note("Ana")])
    automation("Conectado", [{"type": "agent", "agent": "esp32_01", "to": "online"}], [note("on")])
    automation("Desconectado", [{"type": "agent", "agent": "esp32_01", "to": "offline"}], [note("off")])
    automation(
        "Calor",
        [{"type": "sensor", "zone": "lab", "channel": "temperature", "above": 25}],
        [light("garage")],
    )
    Agent.objects.create(agent_id="esp32_01", transport=Agent.Transport.MQTT, approved=True)
    home_services.set_person_presence("Carlos", True, **SYSTEM)
    with (
        broker(tmp_path / "broker") as mqtt,
        running_hub(worker_env(live_env, mqtt.url), serve=True, **QUICK) as hub,
    ):
        held("Luz")

        async def switch_through_stdio() -> None:  # another process: Claude Desktop's
            async with StdioClient(live_env) as stdio:
                await stdio.call("set_light_state", {"name": "salon", "on": True})

        asyncio.run(switch_through_stdio())
        (run,) = done("Luz")
        assert run.status == "done", (run.trace, hub.output()[-2000:])
        assert run.trace[0]["trigger"]["name"] == "salon" and run.trace[1]["ok"] is True
        assert home_reads.light("cocina")["on"] is True

        home_services.set_alarm_state(True, **SYSTEM)
        home_services.set_person_presence("Ana", True, **SYSTEM)  # anyone arrives, and Ana
        home_services.set_person_presence("Ana", False, **SYSTEM)
        home_services.set_person_presence("Carlos", False, **SYSTEM)  # now everyone is away
        agent_connected("esp32_01", "test:1", {})
        agent_disconnected("esp32_01", "test:1")
        sensors = client(mqtt.url)
        publish_all(
            sensors,
            [("office/lab/sensor/env_01/temperature", {"value": 20, "unit": "c"})],
        )
        time.sleep(0.5)  # the worker's next broadcast carries it apart from the hot one
        publish_all(sensors, [("office/lab/sensor/env_01/temperature", {"value": 27, "unit": "c"})])
        for name in ("Alarma", "Todos fuera", "Alguien llega", "Ana llega", "Conectado", "Desconectado"):
            assert [r.status for r in done(name)] == ["done"], name
        (hot,) = done("Calor")
        assert hot.trigger["value"] == 27 and home_reads.light("garage")["on"] is True
        sensors.loop_stop()
        sensors.disconnect()


def test_two_automations_switching_each_other_are_stopped_with_the_reason(live_env):
    ping = [{"type": "light", "name": "salon", "to": "on"}]
    pong = [{"type": "light", "name": "cocina", "to": "on"}]
    off_on = lambda mine, other: [  # noqa: E731
        {"tool": "set_light_state", "arguments": {"name": mine, "on": False}},
        light(other),
    ]
    automation("Ping", ping, off_on("salon", "cocina"), mode="queued")
    automation("Pong", pong, off_on("cocina", "salon"), mode="queued")
    with running_hub(live_env, serve=True, **QUICK, AUTOMATION_CHAIN_MAX="3"):
        held("Ping")
        held("Pong")
        time.sleep(0.5)
        home_services.set_light_state("salon", True, **SYSTEM)
        stopped = wait_until(
            lambda: AutomationRun.objects.filter(status="stopped").first(), what="the loop stopped"
        )
        time.sleep(1)  # nothing more runs
        found = list(AutomationRun.objects.order_by("started_at", "id"))
    assert [r.depth for r in found] == [0, 1, 2, 3, 4]
    assert [r.automation.name for r in found] == ["Ping", "Pong", "Ping", "Pong", "Ping"]
    assert "deeper than AUTOMATION_CHAIN_MAX (3)" in stopped.trace[-1]["stopped"]


def test_serve_leaves_automations_to_another_process_when_told(live_env, tmp_path):
    automation("Luz", [{"type": "light", "name": "salon", "to": "on"}], [light("cocina")])
    with running_hub(live_env, serve=True, **QUICK, AUTOMATIONS_IN_PROCESS="0"):
        time.sleep(2)  # a round or two of an engine, were one running
        assert Automation.objects.get().holder == ""
        engine = Process(["run_automations"], {**live_env, **QUICK}, tmp_path / "engine.log")
        try:
            held("Luz")
            time.sleep(0.5)
            home_services.set_light_state("salon", True, **SYSTEM)
            assert [r.status for r in done("Luz")] == ["done"], engine.output()
        finally:
            assert engine.stop() == 0
        assert Automation.objects.get().holder == ""  # let go on SIGTERM


def test_a_real_cron_minute_runs_once_and_a_killed_holder_is_taken_over(live_env, tmp_path):
    """`* * * * *` in a real `serve`: at the minute it runs once; the holder killed (kill -9),
    `run_automations` takes the automation over within seconds and does not run it again."""
    automation("Cada minuto", [{"type": "time", "cron": "* * * * *"}], [light("bano")])
    automation("Luz", [{"type": "light", "name": "salon", "to": "on"}], [light("cocina")])
    env = {**live_env, **QUICK}
    with running_hub(env, serve=True) as serve:
        first = held("Cada minuto")
        spare = Process(["run_automations"], env, tmp_path / "spare.log")
        try:
            (run,) = wait_until(
                lambda: [r for r in runs("Cada minuto") if r.status != "running"],
                timeout=65,
                what="the minute's run",
            )
            minute = run.started_at
            assert minute.second == 0 and (datetime.now(UTC) - minute).total_seconds() < 5
            assert (run.holder, home_reads.light("bano")["on"]) == (first, True), serve.output()[-2000:]
            serve.stop(kill=True)
            killed = time.monotonic()
            taker = wait_until(lambda: Automation.objects.get(name="Cada minuto").holder != first, timeout=8)
            assert taker and time.monotonic() - killed < 5
            home_services.set_light_state("salon", True, **SYSTEM)
            (change_run,) = done("Luz")
            assert change_run.status == "done" and change_run.holder != first
            assert [r.started_at for r in runs("Cada minuto")] == [minute]  # not again
            row = Automation.objects.get(name="Cada minuto")
            assert row.state["marks"] == {"0": minute.isoformat()}
        finally:
            spare.stop()
