"""The automations engine: a thin driver of `automations.evaluation` over the live home.

One `Engine` per process (`serve` runs one unless AUTOMATIONS_IN_PROCESS=0;
`manage.py run_automations` runs one beside bare daphne). It

- holds automations under one lease of its own (`services.claim_round`, every third of
  AUTOMATION_LEASE_SECONDS: one row renewed, the automations naming it as their holder), so
  that of several processes over one database exactly one evaluates each;
- hears the home's changes on the change feed (`audit.changes`, group `home`) and every
  automation saved, enabled, disabled or deleted (`automations.announce`: a lease round at
  once), keeps a `HomeView` of the home, and hands each change to the held automations'
  `Evaluator`s;
- wakes for the time and sun triggers (`schedules.next_after`) and the `for_seconds` timers;
- runs what fires: conditions (`conditions_hold`), then the actions (`actions.perform`) as the
  caller `automation:<name>` with the scopes of the owner who enabled it, each step in the
  run's trace, `on_error` deciding whether a failed step ends the run.

What outlives a process is in the automation's row (`state`): the `for_seconds` timers running
and, for each time or sun trigger, the last moment handled. A moment is marked handled in the
transaction that records its run, fenced by the lease, so a process that takes over (its holder
died) runs each due moment once: at once when still within AUTOMATION_GRACE_SECONDS, else a run
with status `missed` says so. Changes are not kept: one made while nobody held the automation
(the few seconds of a takeover) does not fire it, and the new holder starts from the home as it
then is.

Modes: `single` ignores a firing while a run is going (nothing recorded; a scheduled moment is
still marked handled), `restart` stops the run ("restarted") and starts again, `queued` runs it
afterwards, at most `max_queued` waiting (more: a run recorded stopped, "queue full"). Loop
guards: a change made by a run at depth d starts runs at depth d+1, and one deeper than
AUTOMATION_CHAIN_MAX, or past AUTOMATION_RUNS_PER_MINUTE runs of one automation in a minute, is
recorded as stopped with the reason; the engine goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from audit.changes import CHANGE_EVENT, CHANGES_GROUP
from automations import schedules
from automations.announce import AUTOMATIONS_CHANGED, AUTOMATIONS_GROUP
from automations.definition import Definition, parse
from automations.engine import changes as feed
from automations.engine import selectors, services
from automations.engine.actions import perform
from automations.engine.services import Held
from automations.errors import DefinitionError
from automations.evaluation import (
    Change,
    ChangeKey,
    Evaluator,
    Firing,
    HomeView,
    change_keys,
    conditions_hold,
)
from automations.models import AutomationRun
from common.groups import channel_layer, hear_every_process, receive_forever
from common.holders import process_name
from mcp_endpoint.engine.registry import registry
from mcp_endpoint.engine.tools import Caller, ToolContext

logger = logging.getLogger(__name__)

Status = AutomationRun.Status
MAX_WAIT_SECONDS = 1.0  # the loop looks at the clock at least this often
MISSED_SEARCH = 10_000  # moments counted at most when telling how many were missed
RATE_WINDOW = timedelta(minutes=1)


@dataclass
class Loaded:
    """A held automation, ready to run: its definition, evaluator and schedule marks."""

    held: Held
    definition: Definition
    evaluator: Evaluator
    marks: dict[int, datetime]  # time or sun trigger -> the last moment handled
    running: asyncio.Task[None] | None = None
    queue: deque[tuple[Firing, int]] = field(default_factory=deque)
    starts: deque[datetime] = field(default_factory=deque)  # runs started in the last minute
    upcoming: dict[int, tuple[datetime, datetime | None]] = field(
        default_factory=dict
    )  # index -> (mark, next)

    def next_moment(self, index: int, trigger: Any) -> datetime | None:
        """The next moment of scheduled trigger `index` after its mark. Computed once per mark:
        a cron or sun computation costs about 0.1 ms, and the loop asks for every held trigger
        each time it wakes, which with hundreds held kept it from the change feed for tens of
        milliseconds."""
        mark = self.marks[index]
        known = self.upcoming.get(index)
        if known is None or known[0] != mark:
            known = self.upcoming[index] = (mark, _next(trigger, mark))
        return known[1]

    @property
    def name(self) -> str:
        return self.held.name

    def state(self) -> dict[str, Any]:
        """What the row keeps for the next holder."""
        return {
            "version": self.held.version,
            "armed": {str(i): at.isoformat() for i, at in self.evaluator.armed.items()},
            "marks": {str(i): at.isoformat() for i, at in self.marks.items()},
        }


def _times(raw: Any) -> dict[int, datetime]:
    out = {}
    for key, value in (raw or {}).items():
        moment = parse_datetime(str(value))
        if moment is not None and str(key).isdigit():
            out[int(key)] = moment
    return out


def load(held: Held, now: datetime) -> Loaded:
    """An automation as its row says, with the state a previous holder left (unless the
    definition changed since: then its timers and marks start over from `now`).
    DefinitionError when the stored definition no longer parses."""
    definition = parse(held.definition)
    same = held.state.get("version") == held.version
    evaluator = Evaluator(definition, _times(held.state.get("armed")) if same else {})
    marks = _times(held.state.get("marks")) if same else {}
    for index, _ in evaluator.scheduled():
        marks.setdefault(index, now)
    return Loaded(held, definition, evaluator, marks)


class Stopped(Exception):
    """Why a run was cancelled (its task's cancellation message)."""


class Engine:
    """The engine of this process (module docstring). `start`/`stop` from the process's event
    loop; `lease_round`, `handle_event`, `handle_changes` and `tick` are its steps, which its
    loop takes and which may also be driven one by one with any clock."""

    def __init__(self, holder: str | None = None, clock: Callable[[], datetime] = timezone.now) -> None:
        self.holder = holder or process_name()
        self.clock = clock
        self.view = HomeView()
        self.loaded: dict[str, Loaded] = {}
        # Which held automations each change can concern (`Evaluator.concerns`): a change is
        # handed to those only, so its cost follows the automations it may fire, not all held.
        self.concerned: dict[ChangeKey, dict[str, Loaded]] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._wake = asyncio.Event()
        self._listening = asyncio.Event()  # joined the change feed: only then does it hold any
        self._round_now = True

    # --- running ------------------------------------------------------------------------

    async def start(self) -> None:
        """Listen, read the home, and run the loop (leases, schedules, timers) until `stop`."""
        if self._tasks:
            return
        try:  # the devices' tools, for actions that call them
            await registry.start()
        except Exception:
            logger.exception("automations: device tools are unavailable (their view did not load)")
        self._tasks.append(asyncio.ensure_future(self._listen()))
        await self.read_home()
        self._tasks.append(asyncio.ensure_future(self._loop()))

    async def stop(self) -> None:
        """Stop every run ("the engine stopped") and let go of the automations."""
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []
        for loaded in list(self.loaded.values()):
            await self._drop(loaded, "the engine stopped")
        try:
            await sync_to_async(services.release)(self.holder)
        except Exception:
            logger.warning("automations: could not let go of them (their leases lapse)", exc_info=True)

    async def read_home(self) -> None:
        """Start from the home as the database has it."""
        self.view = await sync_to_async(selectors.read_view)()

    async def _listen(self) -> None:
        layer = channel_layer()
        groups = [CHANGES_GROUP, AUTOMATIONS_GROUP]
        while True:  # the layer (Redis) may be away at the start: try again
            try:
                channel = await layer.new_channel()
                for group in groups:
                    await layer.group_add(group, channel)
                break
            except Exception:
                logger.exception("automations: could not join the change feed; retrying")
                await asyncio.sleep(1)
        heard = asyncio.ensure_future(receive_forever(layer, channel, self._heard, "automations engine"))
        try:
            await hear_every_process(layer)
            self._listening.set()
            await heard
        finally:
            heard.cancel()

    async def _heard(self, message: dict[str, Any]) -> None:
        try:
            if message.get("type") == CHANGE_EVENT:
                await self.handle_event(message.get("event") or {})
            elif message.get("type") == AUTOMATIONS_CHANGED:
                self._round_now = True
                self._wake.set()
        except Exception:
            logger.exception("automations: could not handle %s", message.get("type"))

    async def _loop(self) -> None:
        # An automation held is one whose changes are heard: no lease before the feed is joined.
        await self._listening.wait()
        loop = asyncio.get_running_loop()
        next_round = lapses = loop.time()
        while True:
            if self._round_now or loop.time() >= next_round:
                self._round_now = False
                next_round = loop.time() + settings.AUTOMATION_LEASE_SECONDS / 3
                try:
                    await self.lease_round()
                    lapses = loop.time() + settings.AUTOMATION_LEASE_SECONDS
                except Exception:
                    logger.warning("automations: could not renew the leases", exc_info=True)
                    if loop.time() >= lapses:  # another process may hold them now
                        for loaded in list(self.loaded.values()):
                            await self._drop(loaded, "its lease lapsed")
            try:
                await self.tick()
            except Exception:
                logger.exception("automations: a scheduled step failed")
            wait = min(MAX_WAIT_SECONDS, next_round - loop.time(), self._until_due())
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), max(0.0, wait))

    def _until_due(self) -> float:
        now = self.clock()
        due = [t for loaded in self.loaded.values() for t in self._due_moments(loaded)]
        return min(((t - now).total_seconds() for t in due), default=MAX_WAIT_SECONDS)

    def _due_moments(self, loaded: Loaded) -> list[datetime]:
        moments = list(loaded.evaluator.timers().values())
        for index, trigger in loaded.evaluator.scheduled():
            moment = loaded.next_moment(index, trigger)
            if moment is not None:
                moments.append(moment)
        return moments

    # --- leases -------------------------------------------------------------------------

    async def lease_round(self) -> None:
        """Take, renew and let go of automations; load the new and the changed ones."""
        lease = timedelta(seconds=settings.AUTOMATION_LEASE_SECONDS)
        known = {loaded.held.pk: loaded.held for loaded in self.loaded.values()}
        claimed = await sync_to_async(services.claim_round)(self.holder, lease, known)
        held = {h.name: h for h in claimed}
        for name, loaded in list(self.loaded.items()):
            if name not in held:
                await self._drop(loaded, "disabled, deleted or held by another process")
            elif held[name].version != loaded.held.version or held[name].pk != loaded.held.pk:
                await self._drop(loaded, "the automation changed")
        now = self.clock()
        new = []
        for name, row in held.items():
            if name in self.loaded:
                self.loaded[name].held = row
                continue
            try:
                loaded = load(row, now)
            except DefinitionError as exc:
                logger.error("automation %s: its definition does not parse, not run: %s", name, exc)
                continue
            self._hold(loaded)
            new.append(loaded)
        if new:
            states = {n.held.pk: n.state() for n in new}
            await sync_to_async(services.save_states)(self.holder, states)
            await sync_to_async(services.end_orphan_runs)([n.held.pk for n in new], self.holder)

    def _hold(self, loaded: Loaded) -> None:
        self.loaded[loaded.name] = loaded
        for key in loaded.evaluator.concerns():
            self.concerned.setdefault(key, {})[loaded.name] = loaded

    async def _drop(self, loaded: Loaded, why: str) -> None:
        if self.loaded.get(loaded.name) is loaded:
            del self.loaded[loaded.name]
            for key in loaded.evaluator.concerns():
                holders = self.concerned.get(key, {})
                holders.pop(loaded.name, None)
                if not holders:
                    self.concerned.pop(key, None)
        loaded.queue.clear()
        task = loaded.running
        if task is not None and not task.done():
            task.cancel(why)
            with contextlib.suppress(asyncio.CancelledError):
                await task

    # --- changes ------------------------------------------------------------------------

    async def handle_event(self, event: dict[str, Any]) -> None:
        """One event of the change feed."""
        found = feed.changes_from_event(event, self.clock())
        if found is None:  # something changed, not said what: read the home afresh
            after = await sync_to_async(selectors.read_view)()
            found = feed.differences(self.view, after, self.clock(), feed.made_by(event))
        await self.handle_changes(found)

    async def handle_changes(self, found: list[Change]) -> None:
        for change in found:
            before = self.view.copy()
            self.view.apply(change)
            own, every = (self.concerned.get(key, {}) for key in change_keys(change))
            for loaded in list({**own, **every}.values()) if every else list(own.values()):
                armed = dict(loaded.evaluator.armed)
                firings = loaded.evaluator.on_change(change, before, self.view)
                if loaded.evaluator.armed != armed:
                    await self._save(loaded)
                if firings:
                    depth = (await sync_to_async(selectors.chain_depth)(change.by) + 1) if change.by else 0
                    for firing in firings:
                        await self._fire(loaded, firing, depth)

    # --- moments ------------------------------------------------------------------------

    async def tick(self) -> None:
        """Fire what is due now: `for_seconds` timers, then time and sun triggers."""
        now = self.clock()
        for loaded in list(self.loaded.values()):
            for index, due in loaded.evaluator.timers().items():
                if due <= now:
                    firing = loaded.evaluator.timer(index, due, self.view)
                    await self._save(loaded)
                    if firing is not None:
                        await self._fire(loaded, firing, 0)
            for index, trigger in loaded.evaluator.scheduled():
                await self._moments(loaded, index, trigger, now)

    async def _moments(self, loaded: Loaded, index: int, trigger: Any, now: datetime) -> None:
        """The moments of scheduled trigger `index` due by `now`: the last one runs if within
        the grace window; the others (or all) are recorded as one missed run."""
        due, count, first = [], 0, None
        moment = loaded.next_moment(index, trigger)
        while moment is not None and moment <= now and count < MISSED_SEARCH:
            first = first or moment
            due.append(moment)
            count += 1
            moment = _next(trigger, moment)
        if not due:
            return
        last = due[-1]
        grace = timedelta(seconds=settings.AUTOMATION_GRACE_SECONDS)
        runs_now = now - last <= grace
        missed = count - 1 if runs_now else count
        if missed:
            until = due[-2] if runs_now else last
            loaded.marks[index] = until
            firing = loaded.evaluator.moment(index, until)
            note = {"missed": missed, "from": first.isoformat() if first else "", "until": until.isoformat()}
            if not runs_now:
                note["why"] = f"due while no engine ran, more than {grace.total_seconds():g} s ago"
            await self._record(loaded, firing, 0, Status.MISSED, [note], state=loaded.state())
        if runs_now:
            loaded.marks[index] = last
            await self._fire(loaded, loaded.evaluator.moment(index, last), 0, scheduled=True)

    # --- runs ---------------------------------------------------------------------------

    async def _fire(self, loaded: Loaded, firing: Firing, depth: int, *, scheduled: bool = False) -> None:
        """A trigger fired: the loop guards, then the mode decide whether a run starts."""
        state = loaded.state() if scheduled else None  # the mark, written with the run
        now = self.clock()
        while loaded.starts and now - loaded.starts[0] >= RATE_WINDOW:
            loaded.starts.popleft()
        reason = None
        if depth > settings.AUTOMATION_CHAIN_MAX:
            reason = (
                f"a chain of automations deeper than AUTOMATION_CHAIN_MAX ({settings.AUTOMATION_CHAIN_MAX})"
            )
        elif len(loaded.starts) >= settings.AUTOMATION_RUNS_PER_MINUTE:
            per_minute = settings.AUTOMATION_RUNS_PER_MINUTE
            reason = f"more than AUTOMATION_RUNS_PER_MINUTE ({per_minute}) runs in a minute"
        if reason is not None:
            logger.warning("automation %s: stopped: %s", loaded.name, reason)
            await self._record(loaded, firing, depth, Status.STOPPED, [{"stopped": reason}], state=state)
            return
        busy = loaded.running is not None and not loaded.running.done()
        mode = loaded.definition.mode
        if busy and mode == "single":
            if state is not None:
                await self._save(loaded)
            return
        if busy and mode == "queued":
            if len(loaded.queue) >= loaded.definition.max_queued:
                note = {"stopped": f"queue full ({loaded.definition.max_queued} runs waiting)"}
                await self._record(loaded, firing, depth, Status.STOPPED, [note], state=state)
            else:
                if state is not None:
                    await self._save(loaded)
                loaded.queue.append((firing, depth))
            return
        if busy and loaded.running is not None:  # restart
            loaded.running.cancel("restarted")
            with contextlib.suppress(asyncio.CancelledError):
                await loaded.running
        self._start(loaded, firing, depth, state)

    def _start(self, loaded: Loaded, firing: Firing, depth: int, state: dict[str, Any] | None) -> None:
        loaded.starts.append(self.clock())
        loaded.running = asyncio.ensure_future(self._run(loaded, firing, depth, state))
        loaded.running.add_done_callback(lambda _: self._next_queued(loaded))

    def _next_queued(self, loaded: Loaded) -> None:
        if loaded.queue and self.loaded.get(loaded.name) is loaded:
            firing, depth = loaded.queue.popleft()
            self._start(loaded, firing, depth, None)

    async def _run(self, loaded: Loaded, firing: Firing, depth: int, state: dict[str, Any] | None) -> None:
        trace: list[dict[str, Any]] = [{"trigger": firing.trigger}]
        try:
            scopes = await sync_to_async(selectors.acting_scopes)(loaded.held.enabled_by)
        except selectors.NotAnOwner as exc:
            trace.append({"ok": False, "error": f"not run: {exc}"})
            await self._record(loaded, firing, depth, Status.FAILED, trace[1:], state=state)
            return
        run = await sync_to_async(services.start_run)(
            loaded.held,
            self.holder,
            at=firing.at,
            trigger=firing.trigger,
            depth=depth,
            trace=trace,
            state=state,
        )
        if run is None:
            return  # another process holds it now
        status = Status.DONE
        try:
            judged = conditions_hold(loaded.definition, self.view, self.clock())
            trace += judged
            if not all(c["ok"] for c in judged):
                status = Status.SKIPPED
            else:
                ctx = ToolContext(caller=self._caller(loaded.name, scopes))
                for action in loaded.definition.actions:
                    step = await perform(action, ctx, loaded.name)
                    trace.append(step)
                    if not step["ok"] and loaded.definition.on_error == "stop":
                        status = Status.FAILED
                        break
        except asyncio.CancelledError as cancelled:
            trace.append({"stopped": str(cancelled.args[0]) if cancelled.args else "cancelled"})
            await asyncio.shield(sync_to_async(services.finish_run)(run, Status.STOPPED, trace))
            raise
        except Exception as exc:  # a fault of the hub's: the run fails, the engine goes on
            logger.exception("automation %s: the run failed", loaded.name)
            trace.append({"ok": False, "error": f"internal error: {type(exc).__name__}"})
            status = Status.FAILED
        await sync_to_async(services.finish_run)(run, status, trace)

    @staticmethod
    def _caller(name: str, scopes: frozenset[str]) -> Caller:
        """Who a run acts as: its dangerous actions were confirmed when an owner enabled it."""
        return Caller(
            actor=feed.actor_of(name), interface=feed.AUTOMATION_INTERFACE, scopes=scopes, confirms=False
        )

    async def _record(
        self,
        loaded: Loaded,
        firing: Firing,
        depth: int,
        status: str,
        trace: list[dict[str, Any]],
        *,
        state: dict[str, Any] | None,
    ) -> None:
        """A run that ends as it starts (stopped by a guard, missed, failed before running)."""
        await sync_to_async(services.start_run)(
            loaded.held,
            self.holder,
            at=firing.at,
            trigger=firing.trigger,
            depth=depth,
            status=status,
            trace=[{"trigger": firing.trigger}, *trace],
            state=state,
        )

    async def _save(self, loaded: Loaded) -> None:
        await sync_to_async(services.save_state)(loaded.held.pk, self.holder, loaded.state())

    async def settle(self) -> None:
        """Wait until no run of this engine is going or waiting (driving it step by step)."""
        while True:
            going = [
                lo.running for lo in self.loaded.values() if lo.running is not None and not lo.running.done()
            ]
            if not going:
                return
            await asyncio.wait(going)


def _next(trigger: Any, after: datetime) -> datetime | None:
    try:
        return schedules.next_after(trigger, after)
    except schedules.ScheduleError:  # a sun trigger with no location: never
        return None
