"""The engine driven step by step with a clock the test moves: what fires, what runs, what is
recorded, what survives a restart, and where loops stop."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.contrib.auth import get_user_model

from audit.models import Event
from automations.engine.runner import Engine
from automations.engine.services import Held, start_run
from automations.models import Automation, AutomationRun, EngineHolder
from devices.home import selectors as home_reads
from devices.telemetry.parsing import Reading
from devices.telemetry.services import Batch, store_batch
from tests.automations.engine_support import Clock, automation, light_event, runs

pytestmark = pytest.mark.django_db

SALON_ON = [{"type": "light", "name": "salon", "to": "on"}]
COCINA_ON = [{"tool": "set_light_state", "arguments": {"name": "cocina", "on": True}}]


def drive(steps) -> None:
    """Run the async `steps()` on a loop of its own (the test's database thread answers)."""
    async_to_sync(steps)()


async def started(clock: Clock, holder: str = "one") -> Engine:
    engine = Engine(holder, clock)
    await engine.read_home()
    await engine.lease_round()
    return engine


def test_a_light_trigger_runs_its_actions_as_the_automation_with_each_step_traced(home):
    automation(
        "Cocina tras salón",
        SALON_ON,
        [*COCINA_ON, {"notify": "salón encendido"}],
        conditions=[{"type": "alarm", "armed": False}],
    )

    async def steps() -> None:
        engine = await started(Clock())
        await engine.handle_event(light_event("salon", True))
        await engine.settle()

    drive(steps)
    assert home_reads.light("cocina")["on"] is True
    (run,) = runs("Cocina tras salón")
    assert run.status == "done" and run.depth == 0 and run.holder == "one"
    trigger, condition, tool, notified = run.trace
    assert trigger["trigger"]["name"] == "salon"
    assert condition == {"condition": {"type": "alarm", "armed": False}, "ok": True, "why": "disarmed"}
    assert tool["ok"] is True and tool["action"].startswith("call set_light_state")
    assert notified == {"action": "notify (info): salón encendido", "ok": True}
    event = Event.objects.get(action="light.set", target="light:cocina")
    assert (event.actor, event.interface) == ("automation:Cocina tras salón", "automation")


def test_a_condition_that_does_not_hold_skips_the_run(home):
    automation("Solo armada", SALON_ON, COCINA_ON, conditions=[{"type": "alarm", "armed": True}])

    async def steps() -> None:
        engine = await started(Clock())
        await engine.handle_event(light_event("salon", True))
        await engine.settle()

    drive(steps)
    (run,) = runs("Solo armada")
    assert run.status == "skipped" and run.trace[1]["ok"] is False
    assert home_reads.light("cocina")["on"] is False


def test_on_error_stop_ends_the_run_and_continue_goes_on(home):
    failing = {"tool": "set_light_state", "arguments": {"name": "no_such_light", "on": True}}
    automation("Para", SALON_ON, [failing, *COCINA_ON])
    automation("Sigue", SALON_ON, [failing, {"notify": "sigo"}], on_error="continue")

    async def steps() -> None:
        engine = await started(Clock())
        await engine.handle_event(light_event("salon", True))
        await engine.settle()

    drive(steps)
    (stopped,) = runs("Para")
    assert stopped.status == "failed" and len(stopped.trace) == 2
    assert stopped.trace[1]["ok"] is False and "no_such_light" in stopped.trace[1]["error"]
    assert home_reads.light("cocina")["on"] is False
    (went_on,) = runs("Sigue")
    assert went_on.status == "done" and [s.get("ok") for s in went_on.trace[1:]] == [False, True]


def test_an_automation_whose_owner_is_no_longer_one_fails_saying_why(home):
    row = automation("Huérfana", SALON_ON, COCINA_ON)
    get_user_model().objects.filter(pk=row.enabled_by_id).update(is_superuser=False)

    async def steps() -> None:
        engine = await started(Clock())
        await engine.handle_event(light_event("salon", True))
        await engine.settle()

    drive(steps)
    (run,) = runs("Huérfana")
    assert run.status == "failed" and "no longer an owner" in run.trace[-1]["error"]
    assert home_reads.light("cocina")["on"] is False


def test_a_cron_trigger_fires_at_its_moment_once(home):
    automation("A las nueve", [{"type": "time", "cron": "0 9 * * *"}], COCINA_ON)
    clock = Clock(datetime(2026, 3, 2, 8, 59, 58, tzinfo=UTC))

    async def steps() -> None:
        engine = await started(clock)
        await engine.tick()
        assert await sync_to_async(runs)("A las nueve") == []
        clock.move(seconds=2)
        await engine.tick()
        await engine.tick()
        await engine.settle()

    drive(steps)
    (run,) = runs("A las nueve")
    assert run.status == "done" and run.started_at == datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
    assert Automation.objects.get().state["marks"] == {"0": "2026-03-02T09:00:00+00:00"}


@pytest.mark.parametrize(
    ("down_for", "ran", "missed"),
    [(timedelta(minutes=32), True, 2), (timedelta(minutes=36), False, 3)],
)
def test_moments_due_while_no_engine_ran_run_once_within_the_grace_window_else_are_missed(
    home, settings, down_for, ran, missed
):
    settings.AUTOMATION_GRACE_SECONDS = 300
    automation("Cada diez", [{"type": "time", "cron": "*/10 * * * *"}], COCINA_ON)
    clock = Clock(datetime(2026, 3, 2, 8, 0, 30, tzinfo=UTC))

    async def steps() -> None:
        first = await started(clock, "first")
        await first.stop()  # the hub goes down
        clock.move(seconds=down_for.total_seconds())  # 08:32:30 or 08:36:30
        second = await started(clock, "second")
        await second.tick()
        await second.settle()
        await second.tick()

    drive(steps)
    found = runs("Cada diez")
    assert [r.status for r in found] == ["missed", *(["done"] if ran else [])]
    assert found[0].trace[1]["missed"] == missed
    assert (found[-1].started_at.minute, found[-1].holder) == (30, "second")


def reading(value: float, at: datetime) -> Reading:
    return Reading("sala", "sensor", "env_01", "temperature", value, "c", at.timestamp())


def test_a_for_seconds_timer_survives_a_restart(home):
    automation(
        "Calor sostenido",
        [{"type": "sensor", "zone": "sala", "channel": "temperature", "above": 25, "for_seconds": 60}],
        COCINA_ON,
    )
    clock = Clock()
    hot = {"kind": "telemetry", "sensors": [{"path": "sala/sensor/env_01/temperature", "value": 26}]}

    async def steps() -> None:
        first = await started(clock, "first")
        await first.handle_event(hot)
        await first.stop()

    drive(steps)
    assert Automation.objects.get().state["armed"] == {"0": clock.at.isoformat()}
    store_batch(Batch(readings=[reading(26, clock.at)]))  # still hot, as the new process reads it

    async def later() -> None:
        clock.move(seconds=30)
        second = await started(clock, "second")
        await second.tick()
        assert await sync_to_async(runs)("Calor sostenido") == []
        clock.move(seconds=31)
        await second.tick()
        await second.settle()

    drive(later)
    (run,) = runs("Calor sostenido")
    assert run.status == "done" and run.trigger["value"] == 26
    assert Automation.objects.get().state["armed"] == {}


def slow(name: str, mode: str, **more) -> None:
    automation(name, SALON_ON, [{"delay_seconds": 0.3}, *COCINA_ON], mode=mode, **more)


def three_firings() -> None:
    async def steps() -> None:
        engine = await started(Clock())
        for on in (True, False, True, False, True):
            await engine.handle_event(light_event("salon", on))
            await asyncio.sleep(0.02)  # each run has started
        await engine.settle()

    drive(steps)


def test_single_ignores_a_firing_while_it_runs(home):
    slow("Única", "single")
    three_firings()
    assert [r.status for r in runs("Única")] == ["done"]


def test_restart_stops_the_run_going_and_starts_again(home):
    slow("Otra vez", "restart")
    three_firings()
    found = runs("Otra vez")
    assert [r.status for r in found] == ["stopped", "stopped", "done"]
    assert found[0].trace[-1] == {"stopped": "restarted"}


def test_queued_runs_them_afterwards_and_drops_past_max_queued(home):
    slow("En cola", "queued", max_queued=1)
    three_firings()
    found = runs("En cola")
    assert sorted(r.status for r in found) == ["done", "done", "stopped"]
    (dropped,) = [r for r in found if r.status == "stopped"]
    assert dropped.trace[-1] == {"stopped": "queue full (1 runs waiting)"}


def test_a_chain_deeper_than_the_maximum_is_stopped_with_the_reason(home, settings):
    settings.AUTOMATION_CHAIN_MAX = 2
    other = automation("Otra", [{"type": "light", "name": "bano", "to": "on"}], COCINA_ON)
    automation("Sigue la cadena", SALON_ON, COCINA_ON)
    held = Held(other.pk, other.name, 1, other.definition, {}, other.enabled_by_id)

    async def steps() -> None:
        engine = await started(Clock())
        for depth in (1, 2):  # Otra's newest run is this deep; the change it made, one deeper
            await engine.lease_round()
            await sync_to_async(start_run)(held, "one", at=Clock().at, trigger={}, depth=depth, status="done")
            await engine.handle_event(light_event("salon", depth == 1, by="Otra"))
            await engine.handle_event(light_event("salon", depth != 1, by="Otra"))
            await engine.settle()

    drive(steps)
    found = runs("Sigue la cadena")
    assert [(r.depth, r.status) for r in found] == [(2, "done"), (3, "stopped")]
    assert "deeper than AUTOMATION_CHAIN_MAX (2)" in found[-1].trace[-1]["stopped"]


def test_more_runs_in_a_minute_than_allowed_are_stopped(home, settings):
    settings.AUTOMATION_RUNS_PER_MINUTE = 2
    automation("Nerviosa", SALON_ON, [{"notify": "otra vez"}], mode="queued")

    async def steps() -> None:
        engine = await started(Clock())
        for on in (True, False, True, False, True):
            await engine.handle_event(light_event("salon", on))
            await engine.settle()

    drive(steps)
    found = runs("Nerviosa")
    assert [r.status for r in found] == ["done", "done", "stopped"]
    assert "AUTOMATION_RUNS_PER_MINUTE (2)" in found[-1].trace[-1]["stopped"]


def test_one_holder_at_a_time_and_a_run_of_a_lost_lease_is_not_recorded(home):
    automation("Compartida", SALON_ON, COCINA_ON)

    async def steps() -> None:
        first = await started(Clock(), "first")
        second = await started(Clock(), "second")
        assert (list(first.loaded), list(second.loaded)) == (["Compartida"], [])
        await second.handle_event(light_event("salon", True))
        await second.settle()
        assert await sync_to_async(runs)("Compartida") == []
        await first.stop()
        await second.lease_round()
        assert list(second.loaded) == ["Compartida"]

    drive(steps)


def test_an_engine_whose_lease_lapsed_records_no_run_and_its_automations_are_taken_over(home, settings):
    automation("Compartida", SALON_ON, COCINA_ON)
    settings.AUTOMATION_LEASE_SECONDS = 0.2

    async def steps() -> None:
        first = await started(Clock(), "first")
        await asyncio.sleep(0.3)  # first stalls past its lease, its rows still naming it
        await first.handle_event(light_event("salon", True))
        await first.settle()
        assert await sync_to_async(runs)("Compartida") == []
        settings.AUTOMATION_LEASE_SECONDS = 30
        second = await started(Clock(), "second")
        assert list(second.loaded) == ["Compartida"]
        await first.lease_round()  # first comes back: renews its own lease, holds nothing
        assert first.loaded == {}

    drive(steps)
    assert Automation.objects.get().holder == "second"
    assert sorted(EngineHolder.objects.values_list("name", flat=True)) == ["first", "second"]


def test_a_sun_trigger_fires_at_the_homes_sunset_with_its_offset(home, settings):
    settings.HOMEHUB_LOCATION = "40.4168,-3.7038"  # Madrid
    settings.TIME_ZONE = "Europe/Madrid"
    automation("Al anochecer", [{"type": "sun", "event": "sunset", "offset_minutes": -15}], COCINA_ON)
    from automations import schedules
    from automations.definition import SunTrigger

    clock = Clock(datetime(2026, 6, 21, 12, 0, tzinfo=UTC))
    trigger = SunTrigger(type="sun", event="sunset", offset_minutes=-15)
    moment = schedules.next_after(trigger, clock.at)
    assert moment is not None and 18 <= moment.astimezone(UTC).hour <= 19  # ~21:45 in Madrid

    async def steps() -> None:
        engine = await started(clock)
        clock.at = moment - timedelta(seconds=1)
        await engine.tick()
        assert await sync_to_async(runs)("Al anochecer") == []
        clock.at = moment + timedelta(seconds=1)
        await engine.tick()
        await engine.settle()

    drive(steps)
    (run,) = runs("Al anochecer")
    assert run.status == "done" and run.started_at == moment


def test_runs_are_pruned_by_age_and_by_count(home):
    from django.utils import timezone

    from automations.engine.services import prune_runs

    row = automation("Muchas", SALON_ON, COCINA_ON)
    now = timezone.now()
    for days in (40, 3, 2, 1, 0):
        AutomationRun.objects.create(automation=row, started_at=now - timedelta(days=days), status="done")
    assert prune_runs(timedelta(days=30), keep=2) == 3
    assert [(now - r.started_at).days for r in runs("Muchas")] == [1, 0]


def test_a_changed_or_disabled_automation_is_reloaded_or_let_go_at_the_next_round(home):
    row = automation("Cambia", SALON_ON, [{"delay_seconds": 5}])

    async def steps() -> None:
        engine = await started(Clock())
        await engine.handle_event(light_event("salon", True))
        await asyncio.sleep(0.02)
        await sync_to_async(Automation.objects.filter(pk=row.pk).update)(
            version=2, definition={**row.definition, "actions": COCINA_ON}
        )
        await engine.lease_round()  # what an `automations.changed` announcement starts
        await engine.handle_event(light_event("salon", False))
        await engine.handle_event(light_event("salon", True))
        await engine.settle()
        await sync_to_async(Automation.objects.filter(pk=row.pk).update)(enabled=False)
        await engine.lease_round()
        assert engine.loaded == {}

    drive(steps)
    first, second = runs("Cambia")
    assert (first.status, first.version, first.trace[-1]) == (
        "stopped",
        1,
        {"stopped": "the automation changed"},
    )
    assert (second.status, second.version) == ("done", 2)
    assert home_reads.light("cocina")["on"] is True
    assert Automation.objects.get().holder == ""


def test_stopping_the_engine_stops_its_runs_and_lets_go(home):
    automation("Larga", SALON_ON, [{"delay_seconds": 5}])

    async def steps() -> None:
        engine = await started(Clock())
        await engine.handle_event(light_event("salon", True))
        await asyncio.sleep(0.02)
        await engine.stop()

    drive(steps)
    (run,) = runs("Larga")
    assert (run.status, run.trace[-1]) == ("stopped", {"stopped": "the engine stopped"})
    assert Automation.objects.get().holder == ""
    assert not EngineHolder.objects.exists()


def test_a_run_left_going_by_a_process_that_died_is_ended_by_the_next_holder(home):
    row = automation("Cortada", SALON_ON, COCINA_ON)
    AutomationRun.objects.create(automation=row, started_at=Clock().at, holder="dead:1")

    async def steps() -> None:
        await started(Clock(), "next")

    drive(steps)
    (run,) = runs("Cortada")
    assert run.status == "stopped" and run.trace == [
        {"stopped": "its process (dead:1) ended before it finished"}
    ]
