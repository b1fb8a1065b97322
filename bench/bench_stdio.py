"""MCP over stdio: HomeHub's `manage.py mcp_stdio` against the official SDK's `MCPServer`.

Both servers run as subprocesses and are driven by the same raw client (asyncio, one
JSON-RPC message per line, responses matched by id), so the client's cost is identical.
For each scenario (reads: `get_all_states`, `get_alarm_status`; writes: `set_light_state`
alternating on/off) and each mode (sequential: one call in flight; pipelined: a window of
calls in flight) it measures calls/s, p50/p99 latency and the server's CPU time per call
(utime + stime of the server process from /proc/<pid>/stat, before/after).

HomeHub runs on a fresh temporary SQLite database (migrated and seeded here), with the
environment it gets by default; the peer (`bench/peers/sdk_home_server.py`) keeps the same
home in memory. Both get the same warm-up before every measurement.

    .venv/bin/python bench/bench_stdio.py                 # the whole comparison, < 3 minutes
    .venv/bin/python bench/bench_stdio.py --count 500     # quicker
    .venv/bin/python bench/bench_stdio.py --only homehub  # one side (no ratios)

Exit status 0 when every target of issue 3 is met (HomeHub >= 3x the SDK on reads,
>= 1.5x on writes, compared per scenario), 1 otherwise, 2 on a protocol failure.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness import (
    PROTOCOL_VERSION,
    ROOT,
    Arguments,
    ProtocolFailure,
    Run,
    arguments_for,
    cpu_seconds,
    failed,
    fmt_ms,
    fmt_rate,
    machine,
    prepare_homehub,
    sequential,
    shape_check,
    start_py_spy,
)

PEER = ROOT / "bench" / "peers" / "sdk_home_server.py"

# (scenario, tool, kind); arguments come from `arguments_for`.
SCENARIOS = [
    ("get_all_states", "get_all_states", "read"),
    ("get_alarm_status", "get_alarm_status", "read"),
    ("set_light_state", "set_light_state", "write"),
]
MODES = ("sequential", "pipelined")
TARGETS = {"read": 3.0, "write": 1.5}


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
        self._log = self.log_path.open("wb")
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
        init = await self.request(
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
        request_id = next(self._ids)
        waiter = asyncio.get_running_loop().create_future()
        self._waiters[request_id] = waiter
        start = time.perf_counter()
        self._write({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        message, received = await asyncio.wait_for(waiter, 30)
        return message, received - start

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
        return await self._timed_request("tools/call", {"name": tool, "arguments": arguments})

    async def pipelined(self, tool: str, args: Arguments, n: int, window: int) -> Run:
        """Keep up to `window` calls in flight; a new one goes out as each answer comes in."""
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
            latencies.append(now - start)
            failures += failed(message)
            room.release()
            if len(latencies) == n and not done.done():
                done.set_result(None)

        self._on_response = on_response
        stdin = self.proc.stdin
        clock = time.perf_counter
        try:
            cpu0, wall0 = cpu_seconds(self.pid), clock()
            for i in range(n):
                await room.acquire()
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
            await asyncio.wait_for(done, 60)
            wall = clock() - wall0
            return Run(n, wall, cpu_seconds(self.pid) - cpu0, latencies, failures)
        finally:
            self._on_response = None


# --- report ------------------------------------------------------------------------------


def table(results: dict[tuple[str, str, str], Run], servers: list[str]) -> tuple[str, bool]:
    """Markdown table; returns (text, every target met)."""
    both = servers == ["homehub", "sdk"]
    head = ["scenario", "mode"]
    for server in servers:
        head += [f"{server} calls/s", f"{server} p50/p99 ms", f"{server} CPU µs/call"]
    if both:
        head += ["ratio", "target", ""]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    all_met = True
    for scenario, _tool, kind in SCENARIOS:
        for mode in MODES:
            row = [scenario, mode]
            for server in servers:
                run = results[(server, scenario, mode)]
                row += [
                    fmt_rate(run.rate),
                    f"{fmt_ms(run.percentile(0.50))} / {fmt_ms(run.percentile(0.99))}",
                    f"{run.cpu_per_call_us:,.0f}",
                ]
            if both:
                ratio = results[("homehub", scenario, mode)].rate / results[("sdk", scenario, mode)].rate
                target = TARGETS[kind]
                met = ratio >= target
                all_met &= met
                row += [f"{ratio:.2f}x", f">= {target}x", "pass" if met else "FAIL"]
            lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines), all_met


# --- main --------------------------------------------------------------------------------


async def main(opts: argparse.Namespace) -> int:
    python = sys.executable
    servers = ["homehub", "sdk"] if opts.only is None else [opts.only]
    workdir = Path(tempfile.mkdtemp(prefix="bench_stdio_", dir="/tmp"))
    clients: dict[str, Client] = {}
    profiler: subprocess.Popen | None = None
    started = time.perf_counter()
    try:
        if "homehub" in servers:
            env = prepare_homehub(workdir, python, opts.homehub_debug)
            clients["homehub"] = Client(
                "homehub",
                [python, "manage.py", "mcp_stdio"],
                env,
                ROOT,
                workdir / "homehub.stderr",
            )
        if "sdk" in servers:
            clients["sdk"] = Client(
                "sdk", [python, str(PEER)], dict(os.environ), ROOT, workdir / "sdk.stderr"
            )
        for client in clients.values():
            await client.start()
        if opts.py_spy and "homehub" in clients:
            profiler = start_py_spy(opts.py_spy, clients["homehub"].pid)

        problems = await shape_check(list(clients.values()))
        if problems:
            print("shape check FAILED:\n  " + "\n  ".join(problems), file=sys.stderr)
            return 2
        print(f"shape check: the six tools answer identically on {', '.join(clients)}", file=sys.stderr)

        results: dict[tuple[str, str, str], Run] = {}
        for scenario, tool, _kind in SCENARIOS:
            args = arguments_for(tool)
            for mode in MODES:
                for name, client in clients.items():  # interleaved, so drift hits both alike
                    # The same warm-up for both: `--warmup` calls in the mode about to be measured.
                    if mode == "sequential":
                        if opts.warmup:
                            await client.sequential(tool, args, opts.warmup)
                        run = await client.sequential(tool, args, opts.count)
                    else:
                        if opts.warmup:
                            await client.pipelined(tool, args, opts.warmup, opts.window)
                        run = await client.pipelined(tool, args, opts.count, opts.window)
                    if run.failures:
                        raise ProtocolFailure(f"{name}: {run.failures} failed calls in {scenario}/{mode}")
                    results[(name, scenario, mode)] = run
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
            print(f"py-spy samples of HomeHub (raw, folded stacks): {opts.py_spy}", file=sys.stderr)
        for client in clients.values():
            await client.stop()
        if opts.keep:
            print(f"kept {workdir}", file=sys.stderr)
        else:
            shutil.rmtree(workdir, ignore_errors=True)

    text, all_met = table(results, list(clients))
    print(
        f"\nMCP tools/call over stdio, {opts.count} calls per cell after {opts.warmup} warm-up calls; "
        f"pipelined = {opts.window} calls in flight. Machine: {machine()}. "
        f"HomeHub DJANGO_DEBUG={int(opts.homehub_debug)}. Run took {time.perf_counter() - started:.0f} s.\n"
    )
    print(text, flush=True)
    if len(clients) == 2:
        print(
            f"\nTargets (issue 3): HomeHub >= {TARGETS['read']}x the SDK on reads, "
            f">= {TARGETS['write']}x on writes: {'all met' if all_met else 'NOT all met'}."
        )
        return 0 if all_met else 1
    return 0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--count", type=int, default=3000, help="measured calls per cell (default 3000)")
    parser.add_argument(
        "--warmup", type=int, default=300, help="warm-up calls before each cell (default 300)"
    )
    parser.add_argument("--window", type=int, default=64, help="calls in flight when pipelined (default 64)")
    parser.add_argument("--only", choices=["homehub", "sdk"], help="benchmark one server only")
    parser.add_argument(
        "--homehub-debug", action="store_true", help="run HomeHub with DJANGO_DEBUG=1 (default: 0)"
    )
    parser.add_argument("--py-spy", metavar="FILE", help="record py-spy samples of HomeHub into FILE")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory (database, logs)")
    opts = parser.parse_args(argv)
    if opts.count < 1 or opts.warmup < 0 or opts.window < 1:
        parser.error("--count and --window must be positive, --warmup not negative")
    return opts


if __name__ == "__main__":
    options = parse_args()
    try:
        sys.exit(asyncio.run(main(options)))
    except ProtocolFailure as exc:
        print(f"protocol failure: {exc}", file=sys.stderr)
        sys.exit(2)
