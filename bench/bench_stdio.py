"""MCP over stdio: HomeHub's `manage.py mcp_stdio` against the official SDK's `MCPServer`, on
both of HomeHub's deployments.

Every server runs as a subprocess driven by the same raw client (asyncio, one JSON-RPC
message per line, responses matched by id), so the client's cost is identical. For each
scenario (reads: `get_all_states`, `get_alarm_status`; writes: `set_light_state`
alternating on/off) and each mode (sequential: one call in flight; pipelined: a window of
calls in flight) it measures calls/s, p50/p99 latency and the server's CPU time per call
(utime + stime of the server process from /proc/<pid>/stat, before/after; a database
server's own CPU is not in it).

The scenario `first_second` (issue 29) measures a server just started, as an MCP client
starts one: a fresh process per turn, `initialize` written at once, then `get_all_states`
calls (one in flight, or a window of them) for as long as the first second after the spawn
lasts; it counts the answers received within that second, `initialize` included, and tells
when `initialize` was answered and how much CPU the process had used by the end of the
second. Each side is started once before the rounds (disk cache, compiled bytecode).

Reads are compared with the SDK's server keeping the home in memory
(`bench/peers/sdk_home_server.py`); writes with the same server whose writes commit first,
as HomeHub's do (`bench/peers/sdk_durable_home.py`: the light's row and one audit row in one
transaction per call, with the driver directly, in a copy of HomeHub's database on the same
server). Deployments (`--deployments`, both by default; `bench/harness.py`): `sqlite`
(`make run`'s defaults: SQLite, the database channel layer) and `postgres` (PostgreSQL and
Redis). `mcp_stdio` is a process of its own beside the serving hub, as an MCP client starts
it next to a running hub: the deployment's daphne processes (one on `sqlite`, two on
`postgres`) run on the same database and listen on the change feed, so every write
`mcp_stdio` commits is announced to them (`--alone`: no hub beside it).

This machine's speed drifts by up to ±30 % from minute to minute, so each cell is measured
in `--rounds` interleaved rounds (HomeHub, then the peer, again), each turn after the same
`--warmup` calls in the mode about to be measured; the table shows the medians over the
rounds and each ratio as the median (min-max) of the per-round ratios.

    .venv/bin/python bench/bench_stdio.py                       # both deployments, ~5 minutes
    .venv/bin/python bench/bench_stdio.py --deployments sqlite --count 500 --rounds 1   # a look
    .venv/bin/python bench/bench_stdio.py --only homehub --py-spy /tmp/stdio   # one side
    .venv/bin/python bench/bench_stdio.py --scenarios first_second --rounds 5  # issue 29

Exit status 0 when every target (issues 16, 29) is met by its median ratio (reads >= 3x the
SDK, writes >= 1.5x the durable peer, answers in the first second >= 1x the SDK's, per
scenario and mode), 1 otherwise, 2 on a protocol failure.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import (
    PROTOCOL_VERSION,
    ROOT,
    SETTLE_SECONDS,
    Arguments,
    ProtocolFailure,
    Run,
    Server,
    add_deployment_options,
    arguments_for,
    check_deployment_options,
    cpu_seconds,
    failed,
    figures,
    fmt_latency,
    fmt_ms,
    fmt_rate,
    fmt_ratios,
    machine,
    median_cpu_per_call_us,
    median_rate,
    prepare_deployment,
    run_benchmark,
    sequential,
    shape_check,
    start_py_spy,
    target_cells,
)

PEERS = ROOT / "bench" / "peers"
# (scenario, tool, kind, the peer it is compared with); arguments come from `arguments_for`.
SCENARIOS = [
    ("get_all_states", "get_all_states", "read", "sdk"),
    ("get_alarm_status", "get_alarm_status", "read", "sdk"),
    ("set_light_state", "set_light_state", "write", "durable"),
    ("first_second", "get_all_states", "start", "sdk"),
]
MODES = ("sequential", "pipelined")
TARGETS = {"read": 3.0, "write": 1.5, "start": 1.0}
FIRST_SECOND = 1.0  # seconds after the spawn whose answers `first_second` counts
PEER_LABELS = {"sdk": "SDK (memory)", "durable": "SDK (durable)"}


class Client:
    """A raw MCP client over a subprocess's stdin/stdout."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str], cwd: Path, log: Path) -> None:
        self.name = name
        self.argv = argv
        self.env = env
        self.cwd = cwd
        self.log_path = log
        self.proc: asyncio.subprocess.Process | None = None
        self._ids = itertools.count(1)
        self._waiters: dict[int, asyncio.Future] = {}
        self._on_response: Callable[[int, dict[str, Any], float], None] | None = None
        self._reader: asyncio.Task | None = None

    async def start(self) -> None:
        await self.spawn()
        await self.initialize()

    async def spawn(self) -> None:
        self._log = self.log_path.open("ab")
        self.proc = await asyncio.create_subprocess_exec(
            *self.argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=self._log,
            env=self.env,
            cwd=self.cwd,
            limit=1 << 22,
        )
        self._reader = asyncio.create_task(self._read())

    async def initialize(self) -> float:
        """The handshake; returns when the answer to `initialize` arrived (perf_counter)."""
        init, received = await self._timed_request(
            "initialize",
            {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "bench_stdio", "version": "1"},
            },
        )
        if "result" not in init:
            raise ProtocolFailure(f"{self.name}: initialize failed: {init}")
        self.notify("notifications/initialized")
        return received

    async def stop(self) -> None:
        if self.proc is None:
            return
        with contextlib.suppress(Exception):
            self.proc.stdin.close()
        try:
            await asyncio.wait_for(self.proc.wait(), 10)
        except TimeoutError:
            self.proc.kill()
            await self.proc.wait()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
        self._log.close()

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    async def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        readline = self.proc.stdout.readline
        loads = json.loads
        clock = time.perf_counter
        while line := await readline():
            now = clock()
            message = loads(line)
            request_id = message.get("id")
            if request_id is None:  # a notification (or an id-less error)
                if "error" in message:
                    raise ProtocolFailure(f"{self.name}: {message}")
                continue
            if self._on_response is not None:
                self._on_response(request_id, message, now)
            else:
                waiter = self._waiters.pop(request_id, None)
                if waiter is not None and not waiter.done():
                    waiter.set_result((message, now))
        for waiter in self._waiters.values():
            if not waiter.done():
                waiter.set_exception(ProtocolFailure(f"{self.name} closed its stdout"))

    def _write(self, message: dict[str, Any]) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self._write(message)

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        message, _ = await self._timed_request(method, params)
        return message

    async def _timed_request(self, method: str, params: dict[str, Any]) -> tuple[dict[str, Any], float]:
        """The response and when it arrived (perf_counter)."""
        request_id = next(self._ids)
        waiter = asyncio.get_running_loop().create_future()
        self._waiters[request_id] = waiter
        self._write({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return await asyncio.wait_for(waiter, 30)

    async def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return await self.request("tools/call", {"name": tool, "arguments": arguments})

    # --- measured loops -----------------------------------------------------------------

    async def sequential(self, tool: str, args: Arguments, n: int) -> Run:
        latencies: list[float] = []
        cpu0, wall0 = cpu_seconds(self.pid), time.perf_counter()
        failures = await sequential(self._timed_call, tool, args, n, latencies)
        wall = time.perf_counter() - wall0
        return Run(n, wall, cpu_seconds(self.pid) - cpu0, latencies, failures)

    async def _timed_call(self, tool: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], float]:
        start = time.perf_counter()
        message, received = await self._timed_request("tools/call", {"name": tool, "arguments": arguments})
        return message, received - start

    async def pipelined(
        self, tool: str, args: Arguments, n: int, window: int, deadline: float = float("inf")
    ) -> Run:
        """Keep up to `window` calls in flight; a new one goes out as each answer comes in.
        With a `deadline` (perf_counter), no call goes out after it and the run ends there,
        its latencies those of the calls answered by then."""
        sent_at: dict[int, float] = {}
        latencies: list[float] = []
        failures = 0
        room = asyncio.Semaphore(window)
        done = asyncio.get_running_loop().create_future()

        def on_response(request_id: int, message: dict[str, Any], now: float) -> None:
            nonlocal failures
            start = sent_at.pop(request_id, None)
            if start is None:
                return
            room.release()
            if now > deadline:
                return
            latencies.append(now - start)
            failures += failed(message)
            if len(latencies) == n and not done.done():
                done.set_result(None)

        self._on_response = on_response
        stdin = self.proc.stdin
        clock = time.perf_counter
        try:
            cpu0, wall0 = cpu_seconds(self.pid), clock()
            for i in range(n):
                await room.acquire()
                if clock() >= deadline:
                    break
                request_id = next(self._ids)
                message = {
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "method": "tools/call",
                    "params": {"name": tool, "arguments": args(i)},
                }
                sent_at[request_id] = clock()
                self._write(message)
                if stdin.transport.get_write_buffer_size() > 1 << 16:
                    await stdin.drain()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(done, min(60, max(0.0, deadline - clock())))
            if len(latencies) < n and deadline == float("inf"):
                raise ProtocolFailure(f"{self.name}: {n - len(latencies)} calls unanswered after 60 s")
            wall = min(clock(), deadline) - wall0
            return Run(len(latencies), wall, cpu_seconds(self.pid) - cpu0, latencies, failures)
        finally:
            self._on_response = None

    async def sequential_until(self, tool: str, args: Arguments, deadline: float) -> Run:
        """Calls one at a time until `deadline` (perf_counter); those answered by then count."""
        latencies: list[float] = []
        failures = 0
        cpu0, wall0 = cpu_seconds(self.pid), time.perf_counter()
        for i in itertools.count():
            start = time.perf_counter()
            if start >= deadline:
                break
            message, received = await self._timed_request("tools/call", {"name": tool, "arguments": args(i)})
            if received > deadline:
                break
            latencies.append(received - start)
            failures += failed(message)
        wall = deadline - wall0
        return Run(len(latencies), wall, cpu_seconds(self.pid) - cpu0, latencies, failures)


@dataclass
class Start:
    """One turn of `first_second`: a server's first second after its spawn."""

    answers: int  # received within the second, `initialize` included
    initialized: float  # seconds from the spawn to the answer to `initialize`
    cpu: float  # the process's CPU seconds (utime + stime) at the end of the second


async def first_second(client: Client, tool: str, mode: str, window: int) -> Start:
    """Spawn `client`'s server, hand it `initialize` at once, then call `tool` (one call in
    flight, or `window`) until `FIRST_SECOND` after the spawn; the process is stopped after."""
    spawned = time.perf_counter()
    deadline = spawned + FIRST_SECOND
    await client.spawn()
    cpu_at_deadline = asyncio.create_task(_cpu_at(client.pid, deadline))
    try:
        initialized = await client.initialize()
        answers = 0
        if initialized <= deadline:
            args = arguments_for(tool)
            if mode == "sequential":
                run = await client.sequential_until(tool, args, deadline)
            else:
                run = await client.pipelined(tool, args, sys.maxsize, window, deadline)
            if run.failures:
                raise ProtocolFailure(f"{client.name}: {run.failures} failed calls in its first second")
            answers = 1 + run.calls
        return Start(answers, initialized - spawned, await cpu_at_deadline)
    finally:
        cpu_at_deadline.cancel()
        await client.stop()


async def _cpu_at(pid: int, when: float) -> float:
    await asyncio.sleep(max(0.0, when - time.perf_counter()))
    return cpu_seconds(pid)


# --- report ------------------------------------------------------------------------------

Key = tuple[str, str, str, str]  # (deployment, side, scenario, mode)
StartKey = tuple[str, str, str]  # (deployment, side, mode)


def start_ratios(ours: list[Start], theirs: list[Start]) -> list[float]:
    """Per-round ratios of answers in the first second (a peer that answered nothing: inf)."""
    return [a.answers / b.answers if b.answers else float("inf") for a, b in zip(ours, theirs, strict=True)]


def start_table(starts: dict[StartKey, list[Start]], deployments: list[str]) -> tuple[str, bool]:
    """The first second's table, medians over the rounds; returns (text, target met)."""
    head = ["deployment", "mode", "HomeHub answers in 1 s", "initialize answered at", "CPU in 1 s"]
    head += ["SDK answers in 1 s", "initialize answered at", "CPU in 1 s", "HomeHub/SDK", "target", ""]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    target = TARGETS["start"]
    all_met = True
    for deployment in deployments:
        for mode in MODES:
            row = [deployment, mode]
            sides = [starts.get((deployment, side, mode)) for side in ("homehub", "sdk")]
            for turns in sides:
                if not turns:
                    row += ["", "", ""]
                    continue
                row += [
                    f"{statistics.median(t.answers for t in turns):,.0f}",
                    f"{statistics.median(t.initialized for t in turns) * 1e3:,.0f} ms",
                    f"{statistics.median(t.cpu for t in turns) * 1e3:,.0f} ms",
                ]
            ours, theirs = sides
            if ours and theirs:
                ratios = start_ratios(ours, theirs)
                met = statistics.median(ratios) >= target
                all_met &= met
                row += [fmt_ratios(ratios), f">= {target}x", "pass" if met else "FAIL"]
            else:
                row += ["", f">= {target}x", ""]
            if ours or theirs:
                lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines), all_met


def table(results: dict[Key, list[Run]], deployments: list[str], scenarios: list[str]) -> tuple[str, bool]:
    """Markdown table, medians over the rounds; returns (text, every target met)."""
    head = ["deployment", "scenario", "mode", "HomeHub calls/s", "p50/p99 ms", "CPU µs/call"]
    head += ["peer", "peer calls/s", "p50/p99 ms", "CPU µs/call", "HomeHub/peer", "target", ""]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    all_met = True
    for deployment in deployments:
        for scenario, _tool, kind, peer_name in [sc for sc in SCENARIOS if sc[0] in scenarios]:
            if kind == "start":  # its own table: `start_table`
                continue
            for mode in MODES:
                row = [deployment, scenario, mode]
                sides = [("homehub", None), (peer_name, PEER_LABELS[peer_name])]
                for side, label in sides:
                    runs = results.get((deployment, side, scenario, mode))
                    row += [label] if label else []
                    if runs is None:
                        row += ["", "", ""]
                        continue
                    row += [fmt_rate(median_rate(runs)), fmt_latency(runs)]
                    row.append(f"{median_cpu_per_call_us(runs):,.0f}")
                ours = results.get((deployment, "homehub", scenario, mode))
                theirs = results.get((deployment, peer_name, scenario, mode))
                cells, met = target_cells(ours, theirs, TARGETS[kind])
                all_met &= met
                row += cells
                lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines), all_met


def summary(results: dict[Key, list[Run]], starts: dict[StartKey, list[Start]]) -> list[dict[str, Any]]:
    """The figures as JSON (`--json`): every cell's rounds and per-round ratios."""
    cells = []
    for (deployment, side, scenario, mode), runs in sorted(results.items()):
        peer_name = next(peer for name, _tool, _kind, peer in SCENARIOS if name == scenario)
        peer = results.get((deployment, peer_name, scenario, mode))
        where = {"deployment": deployment, "side": side, "scenario": scenario, "mode": mode}
        cells.append({**where, **figures(runs, peer if side == "homehub" else None)})
    for (deployment, side, mode), turns in sorted(starts.items()):
        peer_turns = starts.get((deployment, "sdk", mode)) if side == "homehub" else None
        where = {"deployment": deployment, "side": side, "scenario": "first_second", "mode": mode}
        cells.append(
            {
                **where,
                "answers": [t.answers for t in turns],
                "initialize_ms": [round(t.initialized * 1e3, 1) for t in turns],
                "cpu_ms": [round(t.cpu * 1e3, 1) for t in turns],
                "ratios": [round(r, 3) for r in start_ratios(turns, peer_turns)] if peer_turns else None,
            }
        )
    return cells


# --- main --------------------------------------------------------------------------------


async def measure_turn(client: Client, tool: str, mode: str, opts: argparse.Namespace) -> Run:
    """The same warm-up for every side: `--warmup` calls in the mode about to be measured."""
    args = arguments_for(tool)
    if mode == "sequential":
        if opts.warmup:
            await client.sequential(tool, args, opts.warmup)
        return await client.sequential(tool, args, opts.count)
    if opts.warmup:
        await client.pipelined(tool, args, opts.warmup, opts.window)
    return await client.pipelined(tool, args, opts.count, opts.window)


async def touch(port: int) -> None:
    """One request, so that a serving process starts its gateway and listens on the feed."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode())
    await writer.drain()
    await reader.read()
    writer.close()


async def measure_first_second(
    kind: str,
    tool: str,
    starters: dict[str, Client],
    opts: argparse.Namespace,
    starts: dict[StartKey, list[Start]],
) -> None:
    """`first_second`'s turns: each side started once unmeasured, then `--rounds` interleaved
    rounds per mode, a fresh process per turn."""
    for client in starters.values():
        await first_second(client, tool, "sequential", opts.window)
    for mode in MODES:
        for _ in range(opts.rounds):
            for name, client in starters.items():
                turn = await first_second(client, tool, mode, opts.window)
                starts.setdefault((kind, name, mode), []).append(turn)
                print(
                    f"  {name:8} first_second      {mode:10} {turn.answers:>7,} answers in "
                    f"{FIRST_SECOND:g} s, initialize answered at {turn.initialized * 1e3:,.0f} ms, "
                    f"CPU {turn.cpu * 1e3:,.0f} ms",
                    file=sys.stderr,
                )


async def run_deployment(
    kind: str, opts: argparse.Namespace, results: dict[Key, list[Run]], starts: dict[StartKey, list[Start]]
) -> None:
    workdir = Path(tempfile.mkdtemp(prefix=f"bench_stdio_{kind}_", dir="/tmp"))
    deployment = prepare_deployment(
        kind, workdir, root=opts.root, pg_server_url=opts.pg_server_url, redis_url=opts.redis_url
    )
    python = sys.executable
    hub: list[Server] = []
    clients: dict[str, Client] = {}
    profiler: subprocess.Popen | None = None
    try:
        env = deployment.homehub_env
        if opts.homehub_debug:
            env = {**env, "DJANGO_DEBUG": "1"}
        if not opts.alone:
            for i in range(deployment.processes):
                hub.append(
                    Server(
                        f"hub-{i}",
                        "daphne",
                        "homehub.asgi:application",
                        opts.root,
                        env,
                        workdir / f"hub-{i}.log",
                    )
                )
            for server in hub:
                await server.start()
                await touch(server.port)
        sides = ["homehub", "sdk", "durable"] if opts.only is None else [opts.only]
        argv = {
            "homehub": [python, "manage.py", "mcp_stdio"],
            "sdk": [python, str(PEERS / "sdk_home_server.py")],
            "durable": [python, str(PEERS / "sdk_durable_home.py")],
        }

        def client_of(name: str, log: str) -> Client:
            cwd = opts.root if name == "homehub" else ROOT
            side_env = env if name == "homehub" else deployment.peer_env
            return Client(name, argv[name], side_env, cwd, workdir / log)

        for name in sides:
            clients[name] = client_of(name, f"{name}.stderr")
        for client in clients.values():
            await client.start()
        if opts.py_spy and "homehub" in clients:
            profiler = start_py_spy(f"{opts.py_spy}.{kind}", clients["homehub"].pid)
        problems = await shape_check(list(clients.values()))
        if problems:
            raise ProtocolFailure("shape check failed:\n  " + "\n  ".join(problems))
        await asyncio.sleep(SETTLE_SECONDS)
        beside = "alone" if opts.alone else f"beside {len(hub)} serving process(es)"
        print(f"{kind}: {deployment.label}; mcp_stdio {beside}; the six tools answer alike", file=sys.stderr)

        for scenario, tool, scenario_kind, peer in [sc for sc in SCENARIOS if sc[0] in opts.scenarios]:
            if scenario_kind == "start":
                names = [name for name in ("homehub", peer) if name in clients]
                starters = {name: client_of(name, f"{name}-starts.stderr") for name in names}
                await measure_first_second(kind, tool, starters, opts, starts)
                continue
            for mode in MODES:
                # Rounds interleaved (A B A B ...), so drift hits both sides alike.
                for _ in range(opts.rounds):
                    for name in ("homehub", peer):
                        client = clients.get(name)
                        if client is None:
                            continue
                        run = await measure_turn(client, tool, mode, opts)
                        if run.failures:
                            raise ProtocolFailure(f"{name}: {run.failures} failed calls in {scenario}/{mode}")
                        results.setdefault((kind, name, scenario, mode), []).append(run)
                        print(
                            f"  {name:8} {scenario:17} {mode:10} {fmt_rate(run.rate):>7} calls/s "
                            f"p50 {fmt_ms(run.percentile(0.5))} ms p99 {fmt_ms(run.percentile(0.99))} ms "
                            f"server CPU {run.cpu_per_call_us:,.0f} µs/call",
                            file=sys.stderr,
                        )
    finally:
        if profiler is not None:
            profiler.send_signal(signal.SIGINT)
            profiler.wait(30)
            print(f"py-spy samples of HomeHub (raw, folded stacks): {opts.py_spy}.{kind}", file=sys.stderr)
        for client in clients.values():
            await client.stop()
        for server in hub:
            server.stop()
        deployment.close()
        if opts.keep:
            print(f"kept {workdir}", file=sys.stderr)
        else:
            shutil.rmtree(workdir, ignore_errors=True)


async def main(opts: argparse.Namespace) -> int:
    deployments = opts.deployments.split(",")
    started = time.perf_counter()
    results: dict[Key, list[Run]] = {}
    starts: dict[StartKey, list[Start]] = {}
    for kind in deployments:
        await run_deployment(kind, opts, results, starts)
    text, all_met = table(results, deployments, opts.scenarios)
    print(
        f"\nMCP tools/call over stdio: per cell {opts.rounds} interleaved rounds of {opts.count} calls "
        f"per side after {opts.warmup} warm-up calls; pipelined = {opts.window} calls in flight; "
        f"mcp_stdio {'alone' if opts.alone else 'beside the serving hub'}"
        f"{'' if opts.root == ROOT else f' (tree {opts.root})'}. Machine: {machine()}. "
        f"Run took {time.perf_counter() - started:.0f} s.\n"
    )
    if results:  # the steady cells (not only `first_second`)
        print(text, flush=True)
    if starts:
        start_text, start_met = start_table(starts, deployments)
        all_met &= start_met
        print(
            f"\nThe first {FIRST_SECOND:g} s after the spawn (issue 29): per mode {opts.rounds} interleaved "
            f"rounds, a fresh process per turn; answers received by then, `initialize` included "
            f"(then `get_all_states`); medians of the rounds, the ratio's spread in brackets.\n"
        )
        print(start_text, flush=True)
    if opts.json:
        Path(opts.json).write_text(json.dumps(summary(results, starts), indent=1))
    if opts.only is None:
        print(
            f"\nTargets (issues 16, 29): HomeHub >= {TARGETS['read']}x the SDK on reads, "
            f">= {TARGETS['write']}x the durable peer on writes, >= {TARGETS['start']}x the SDK's answers "
            f"in the first second: {'all met' if all_met else 'NOT all met'}."
        )
        return 0 if all_met else 1
    return 0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--count", type=int, default=2000, help="measured calls per turn (default 2000)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds per cell (default 3)")
    parser.add_argument(
        "--warmup", type=int, default=200, help="warm-up calls before each turn (default 200)"
    )
    parser.add_argument(
        "--window",
        type=int,
        default=16,
        help="calls in flight when pipelined (default 16, MCP_MAX_CONCURRENT_CALLS)",
    )
    parser.add_argument("--alone", action="store_true", help="no serving hub beside mcp_stdio")
    parser.add_argument("--only", choices=["homehub", "sdk", "durable"], help="benchmark one server only")
    parser.add_argument(
        "--homehub-debug", action="store_true", help="run HomeHub with DJANGO_DEBUG=1 (default: 0)"
    )
    parser.add_argument(
        "--py-spy", metavar="FILE", help="record py-spy samples of HomeHub into FILE.<deployment>"
    )
    add_deployment_options(parser)
    opts = parser.parse_args(argv)
    if opts.count < 1 or opts.warmup < 0 or opts.window < 1 or opts.rounds < 1:
        parser.error("--count, --rounds and --window must be positive, --warmup not negative")
    check_deployment_options(parser, opts, [sc[0] for sc in SCENARIOS])
    return opts


if __name__ == "__main__":
    run_benchmark(main, parse_args())
