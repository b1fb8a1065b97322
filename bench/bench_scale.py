"""Scale (issue 29): two daphne processes against one, and one process holding many
connections.

Scenarios (`--scenarios`, both by default):

- `processes` (the `postgres` deployment only: PostgreSQL and Redis, `bench/harness.py`'s
  `Deployment`): two HomeHub daphne processes run throughout; in the `1 process` turns every
  session goes to the first, in the `2 processes` turns the sessions are spread over both
  (as `bench_http.py` spreads them). `--sessions` MCP sessions over `/mcp` (the raw
  keep-alive client of `bench_http.py`, one connection per session, each sequential) call
  `get_all_states` (read) and `set_light_state` (write, alternating on/off). Per tool, `--warm`
  calls over both processes first (a fresh process's first thousand calls are slower), then
  interleaved rounds (1, 2, 1, 2, ...), each turn on fresh sessions with `--warmup` calls and
  then `--count` measured calls. Per turn: calls/s, p50/p99 latency, CPU per call of the
  servers (both processes, so the idle one's share is in the `1 process` turns), and the
  cores in use, from /proc: the servers, this client, PostgreSQL (its server-wide processes
  and the backends of HomeHub's database), Redis, and the rest of the machine (/proc/stat's
  busy time less all these: whatever else runs there). The ratio two/one is the median of
  the per-round ratios with their min-max (target >= 1.7x). Beside it, the ceiling: the
  calls/s the two-process turn's CPU per call (servers, client, PostgreSQL, Redis) would reach
  with all the machine's cores, over the one-process turn's calls/s: the best two/one this
  machine allows when client and servers share it.
- `connections` (each deployment of `--deployments`): one daphne. `--warm` calls, RSS, a probe
  (one `/mcp` session, `--probe` sequential `get_all_states` calls) with nothing else held;
  `--devices` simulated xiaozhi-style devices on `/ws/devices/` (`bench_devices.py`'s
  `Fleet`), discovery waited for (every device tool offered); RSS; `--mcp-sessions`
  initialized sessions over `/mcp`, each on its own keep-alive connection, fifty per token
  (`MCP_MAX_SESSIONS_PER_TOKEN`'s default); RSS; the probe again on one of them while all are
  held; then every session at once, `--calls-each` sequential `get_all_states` calls each,
  twice (the first time each session, idle for seconds, has its row and token read again).
  Memory per connection is the growth of daphne's RSS divided by the connections added (a
  floor: memory the process freed earlier is reused first).

`--gc-log` puts a `sitecustomize.py` on the servers' PYTHONPATH that logs each garbage
collection over 5 ms (through `gc.callbacks`); the report then gives the servers' full
(generation 2) collections in each measured turn and in the 200 sessions' passes.

Everything on loopback, bounded by counts (and a discovery deadline); this client raises its
soft limit of open files to the hard one.

    .venv/bin/python bench/bench_scale.py                          # both scenarios, ~5 minutes
    .venv/bin/python bench/bench_scale.py --scenarios processes --rounds 6
    .venv/bin/python bench/bench_scale.py --scenarios connections --deployments sqlite --json /tmp/s.json
    .venv/bin/python bench/bench_scale.py --gc-log

Exit status 0 when two processes reach >= 1.7x one (median ratio) for reads and writes, 1
otherwise, 2 on a protocol failure.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from bench_devices import Fleet, Llm, agent_id
from bench_http import Side, close_all, measure, open_sessions
from harness import (
    CLOCK_TICKS,
    SETTLE_SECONDS,
    ProtocolFailure,
    Run,
    Server,
    add_deployment_options,
    check_deployment_options,
    cpu_seconds,
    create_token,
    fmt_ms,
    fmt_rate,
    fmt_ratios,
    machine,
    median_rate,
    prepare_deployment,
    round_ratios,
    rss_mib,
    run_benchmark,
    target_cells,
)

SCENARIOS = ["processes", "connections"]
TOOLS = ["get_all_states", "set_light_state"]  # a read, a write (alternating on/off)
WIDTHS = {"1 process": 1, "2 processes": 2}
TARGET = 1.7
APP = "homehub.asgi:application"
# The database and Redis servers whose CPU a turn reports, by process name.
BACKENDS = ("postgres", "redis-server")
CORE_NAMES = ("servers", "client", *BACKENDS, "rest")
# MCP_MAX_SESSIONS_PER_TOKEN's default: the held sessions share a token fifty at a time, as
# that many agents' clients would at most.
SESSIONS_PER_TOKEN = 50


# --- CPU outside the servers ---------------------------------------------------------------


def machine_busy() -> float:
    """CPU seconds the whole machine has spent busy (every core: user, nice, system, irq and
    softirq; not idle, iowait or steal)."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return sum(values[i] for i in (0, 1, 2, 5, 6)) / CLOCK_TICKS


def backend_cpu(database: str) -> dict[int, tuple[str, float]]:
    """CPU seconds by pid of Redis and of the PostgreSQL processes that serve `database` or
    the whole server (postmaster, writers, checkpointer), not the backends of other
    databases: other work on the machine (tests, say) may use the same server."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                name = (entry / "comm").read_text().strip()
                if name == "postgres":
                    title = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                    one_database = "(" in title or "[local]" in title or "worker" in title
                    if one_database and database not in title.split():
                        continue
                elif name != "redis-server":
                    continue
                found[int(entry.name)] = (name, cpu_seconds(int(entry.name)))
    return found


@dataclass
class Load:
    """What a turn cost outside the measured servers, in CPU seconds."""

    client: float
    machine: float
    backends: dict[str, float] = field(default_factory=dict)
    full_gcs: list[float] | None = None  # ms of each, with --gc-log


Turn = tuple[Run, Load]


# --- with --gc-log: the servers' garbage collections --------------------------------------------

# A sitecustomize.py on the servers' PYTHONPATH: every collection over 5 ms, as a line
# `<time.time() at its end> <generation> <ms>` in a file per process in BENCH_GC_LOG.
GC_LOGGER = """
import gc, os, time
_started = [0.0]
def _log(phase, info):
    if phase == "start":
        _started[0] = time.perf_counter()
    elif (took := time.perf_counter() - _started[0]) > 0.005:
        with open(os.path.join(os.environ["BENCH_GC_LOG"], f"{os.getpid()}.log"), "a") as out:
            out.write(f"{time.time():.3f} {info['generation']} {took * 1e3:.1f}\\n")
gc.callbacks.append(_log)
"""


def gc_logging(env: dict[str, str], folder: Path) -> dict[str, str]:
    """`env` with the collection logger of GC_LOGGER, logging into `folder`."""
    (folder / "site").mkdir(parents=True)
    (folder / "site" / "sitecustomize.py").write_text(GC_LOGGER)
    (folder / "log").mkdir()
    path = os.pathsep.join(filter(None, [str(folder / "site"), env.get("PYTHONPATH")]))
    return {**env, "PYTHONPATH": path, "BENCH_GC_LOG": str(folder / "log")}


def full_collections(env: dict[str, str], since: float, until: float) -> list[float] | None:
    """ms of the generation-2 collections logged between `since` and `until` (time.time())
    by the processes of `env`; None without --gc-log."""
    if "BENCH_GC_LOG" not in env:
        return None
    found = []
    for log in Path(env["BENCH_GC_LOG"]).glob("*.log"):
        for line in log.read_text().splitlines():
            ended, generation, ms = line.split()
            if generation == "2" and since <= float(ended) <= until:
                found.append(float(ms))
    return found


def fmt_gcs(found: list[float] | None) -> str:
    if found is None:
        return ""
    return f"{len(found)}, {sum(found):,.0f} ms" + (f" (max {max(found):,.0f})" if found else "")


async def measured(side: Side, sessions: list, tool: str, n: int, database: str) -> tuple[Run, Load]:
    """`bench_http.measure` with the machine's, PostgreSQL's and Redis's CPU around it."""
    busy0, backends0, since = machine_busy(), backend_cpu(database), time.time()
    run, client = await measure(side, sessions, tool, n)
    busy, backends = machine_busy() - busy0, dict.fromkeys(BACKENDS, 0.0)
    for pid, (name, seconds) in backend_cpu(database).items():
        backends[name] += seconds - backends0.get(pid, (name, 0.0))[1]
    if run.failures:
        raise ProtocolFailure(f"{side.name}: {run.failures} failed {tool} calls")
    return run, Load(client, busy, backends, full_collections(side.servers[0].env, since, time.time()))


def per_call_us(seconds: float, run: Run) -> float:
    return seconds / run.calls * 1e6


def cores(run: Run, load: Load) -> list[float]:
    """Cores in use during a turn: the servers, this client, PostgreSQL, Redis, and the rest
    of the machine (whatever else ran: other work on it, the kernel's share not charged to a
    process)."""
    parts = [run.server_cpu, load.client, *(load.backends[name] for name in BACKENDS)]
    return [seconds / run.wall for seconds in [*parts, load.machine - sum(parts)]]


def fmt_cores(values: list[float]) -> str:
    return " + ".join(f"{v:.2f}" for v in values) + f" = {sum(values):.2f}"


def ceiling(run: Run, load: Load) -> float:
    """The calls/s a turn's work would reach with every core of the machine to itself: the
    cores over the CPU per call of the servers, this client, PostgreSQL and Redis."""
    spent = run.server_cpu + load.client + sum(load.backends.values())
    return (os.cpu_count() or 1) * run.calls / spent


def ceiling_ratios(two: list[Turn], one: list[Turn]) -> list[float]:
    """Per round, the two-process turn's ceiling over the one-process turn's calls/s: the
    best two/one this machine's cores allow, at the CPU per call measured."""
    return [ceiling(run, load) / single.rate for (run, load), (single, _) in zip(two, one, strict=True)]


# --- two processes against one ----------------------------------------------------------------


async def processes(
    servers: list[Server], token: str, database: str, opts: argparse.Namespace
) -> dict[tuple[str, str], list[Turn]]:
    """Interleaved rounds of one process and two, per tool: {(tool, width): turns};
    `database` is the name of HomeHub's on the PostgreSQL server."""
    side = Side("homehub", servers)  # the CPU of both processes, whichever get sessions
    results: dict[tuple[str, str], list[Turn]] = {}
    for tool in TOOLS:
        warming = await open_sessions("http", "warm-up", side.ports, token, opts.sessions)
        try:
            await measure(side, warming, tool, opts.warm)
        finally:
            await close_all(warming)
        for _ in range(opts.rounds):
            for width, count in WIDTHS.items():
                ports = side.ports[:count]
                sessions = await open_sessions("http", f"homehub x{count}", ports, token, opts.sessions)
                try:
                    if opts.warmup:
                        await measure(side, sessions, tool, opts.warmup)
                    run, load = await measured(side, sessions, tool, opts.count, database)
                finally:
                    await close_all(sessions)
                results.setdefault((tool, width), []).append((run, load))
                print(
                    f"  {tool:15} {width:11} {fmt_rate(run.rate):>6} calls/s p50 "
                    f"{fmt_ms(run.percentile(0.5))} ms p99 {fmt_ms(run.percentile(0.99))} ms, µs/call: "
                    f"servers {run.cpu_per_call_us:,.0f} client {per_call_us(load.client, run):,.0f} "
                    f"PG {per_call_us(load.backends['postgres'], run):,.0f} "
                    f"Redis {per_call_us(load.backends['redis-server'], run):,.0f}; cores: "
                    f"{fmt_cores(cores(run, load))}"
                    + (f"; full GCs {fmt_gcs(load.full_gcs)}" if load.full_gcs is not None else ""),
                    file=sys.stderr,
                )
    return results


def median_of(turns: list[Turn], figure: Any) -> float:
    return statistics.median(figure(run, load) for run, load in turns)


def processes_table(results: dict[tuple[str, str], list[Turn]]) -> tuple[str, bool]:
    """Markdown table, medians over the rounds; (text, both targets met)."""
    head = ["scenario", "processes", "calls/s", "p50 ms", "p99 ms", "server CPU µs/call"]
    head += [
        "client µs/call",
        "PostgreSQL µs/call",
        "Redis µs/call",
        "cores: servers + client + PG + Redis + rest",
    ]
    head += ["two/one", "target", "", "ceiling (all cores)"]
    logged = any(load.full_gcs is not None for turns in results.values() for _, load in turns)
    if logged:
        head.append("full GCs, ms per s")
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    all_met = True
    for tool in TOOLS:
        one = results.get((tool, "1 process"))
        for width in WIDTHS:
            turns = results.get((tool, width))
            if not turns:
                continue
            runs = [run for run, _ in turns]
            row = [tool, width, fmt_rate(median_rate(runs))]
            row += [fmt_ms(median_of(turns, lambda r, _l, q=q: r.percentile(q))) for q in (0.5, 0.99)]
            row.append(f"{median_of(turns, lambda r, _l: r.cpu_per_call_us):,.0f}")
            row.append(f"{median_of(turns, lambda r, load: per_call_us(load.client, r)):,.0f}")
            for name in BACKENDS:
                row.append(
                    f"{median_of(turns, lambda r, load, n=name: per_call_us(load.backends[n], r)):,.0f}"
                )
            row.append(
                fmt_cores(
                    [statistics.median(c) for c in zip(*(cores(r, ld) for r, ld in turns), strict=True)]
                )
            )
            if width == "2 processes" and one:
                cells, met = target_cells(runs, [run for run, _ in one], TARGET)
                all_met &= met
                rate = median_of(turns, ceiling)
                row += [*cells, f"{fmt_rate(rate)}/s: {fmt_ratios(ceiling_ratios(turns, one))}"]
            else:
                row += ["", "", "", ""]
            if logged:
                row.append(f"{median_of(turns, lambda r, load: sum(load.full_gcs or []) / r.wall):,.0f}")
            lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines), all_met


def processes_json(results: dict[tuple[str, str], list[Turn]]) -> list[dict[str, Any]]:
    cells = []
    for (tool, width), turns in results.items():
        runs = [run for run, _ in turns]
        one = results.get((tool, "1 process"))
        cells.append(
            {
                "scenario": tool,
                "processes": WIDTHS[width],
                "rates": [round(run.rate, 1) for run in runs],
                "p50_ms": [round(run.percentile(0.5) * 1e3, 3) for run in runs],
                "p99_ms": [round(run.percentile(0.99) * 1e3, 3) for run in runs],
                "server_cpu_us": [round(run.cpu_per_call_us, 1) for run in runs],
                "full_gc_ms": [load.full_gcs for _, load in turns],
                "client_cpu_us": [round(per_call_us(load.client, run), 1) for run, load in turns],
                "backend_cpu_us": [
                    {name: round(per_call_us(s, run), 1) for name, s in load.backends.items()}
                    for run, load in turns
                ],
                "cores": [
                    {name: round(v, 3) for name, v in zip(CORE_NAMES, cores(run, load), strict=True)}
                    for run, load in turns
                ],
                "ratios": (
                    [round(r, 3) for r in round_ratios(runs, [run for run, _ in one])]
                    if one and WIDTHS[width] == 2
                    else None
                ),
                "ceiling_ratios": (
                    [round(r, 3) for r in ceiling_ratios(turns, one)] if one and WIDTHS[width] == 2 else None
                ),
            }
        )
    return cells


# --- one process holding many connections ---------------------------------------------------

REGISTER = """
import json
from django.db import transaction
from devices.agents.services import register_agent
with transaction.atomic():
    tokens = [register_agent(i, transport="ws", actor="bench", interface="system")[1] for i in {ids}]
print(json.dumps(tokens))
"""


def register_devices(env: dict[str, str], count: int, root: Path) -> list[str]:
    """Register `count` WebSocket agents (`bench_devices.agent_id(i)`); their device tokens."""
    code = REGISTER.format(ids=json.dumps([agent_id(i) for i in range(count)]))
    argv = [sys.executable, "manage.py", "shell", "-c", code]
    out = subprocess.run(argv, cwd=root, env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def latency(run: Run) -> dict[str, float]:
    return {
        "calls": run.calls,
        "calls_per_s": round(run.rate, 1),
        "p50_ms": round(run.percentile(0.5) * 1e3, 2),
        "p99_ms": round(run.percentile(0.99) * 1e3, 2),
        "server_cpu_us": round(run.cpu_per_call_us, 1),
    }


async def connections(server: Server, env: dict[str, str], opts: argparse.Namespace) -> dict[str, Any]:
    """One process: RSS and a read's latency, idle, with the devices and with the sessions."""
    from devices.xiaozhi.simulator import firmware_tools

    pid = server.proc.pid
    side = Side("homehub", [server])
    ws_base = f"ws://127.0.0.1:{server.port}"
    firsts = range(0, opts.mcp_sessions, SESSIONS_PER_TOKEN)
    tokens = [create_token(env, f"bench_scale_{first}", root=opts.root) for first in firsts]
    token = tokens[0]
    device_tokens = register_devices(env, opts.devices, opts.root)
    watcher = Llm(ws_base + "/ws/mcp/", create_token(env, "bench_scale_watch", opts.root, "read,devices"))
    await watcher.open()
    fleet = Fleet(ws_base, device_tokens, opts.connect_concurrency)
    sessions: list = []
    report: dict[str, Any] = {}
    try:
        base_tools = await watcher.count_tools()
        probe = await open_sessions("http", "probe", side.ports, token, 1)
        try:
            await measure(side, probe, "get_all_states", opts.warm)
            report["probe_idle"] = latency((await measure(side, probe, "get_all_states", opts.probe))[0])
        finally:
            await close_all(probe)
        await asyncio.sleep(SETTLE_SECONDS)
        report["rss_idle_mib"] = round(rss_mib(pid), 1)
        started = time.perf_counter()
        all_connected = await fleet.grow(opts.devices)
        expected = base_tools + len(firmware_tools()) * opts.devices
        deadline = time.perf_counter() + opts.discovery_timeout
        while (offered := await watcher.count_tools()) < expected and time.perf_counter() < deadline:
            await asyncio.sleep(0.5)
        report["devices"] = {
            "connected": len(fleet.devices),
            "all_connected": all_connected,
            "tools_offered": offered - base_tools,
            "discovery_done": offered >= expected,
            "seconds": round(time.perf_counter() - started, 1),
        }
        await asyncio.sleep(SETTLE_SECONDS)
        report["rss_devices_mib"] = round(rss_mib(pid), 1)
        for first, group_token in zip(firsts, tokens, strict=True):
            count = min(SESSIONS_PER_TOKEN, opts.mcp_sessions - first)
            sessions += await open_sessions("http", "held", side.ports, group_token, count)
        await asyncio.sleep(SETTLE_SECONDS)
        report["rss_sessions_mib"] = round(rss_mib(pid), 1)
        report["probe_held"] = latency((await measure(side, sessions[:1], "get_all_states", opts.probe))[0])
        # Twice: the first time, each idle session's first request reads its row and its token
        # again (they are remembered MCP_AUTH_CACHE_SECONDS); the second, right after, not.
        for key in ("all_sessions", "all_sessions_again"):
            since = time.time()
            every, client = await measure(side, sessions, "get_all_states", opts.calls_each * len(sessions))
            report[key] = {**latency(every), "client_cpu_us": round(per_call_us(client, every), 1)}
            report[key]["full_gc_ms"] = full_collections(env, since, time.time())
        report["rss_end_mib"] = round(rss_mib(pid), 1)
    finally:
        await close_all(sessions)
        await watcher.close()
        await fleet.close()
    devices, held = max(1, report["devices"]["connected"]), opts.mcp_sessions
    report["kib_per_device"] = round((report["rss_devices_mib"] - report["rss_idle_mib"]) * 1024 / devices, 1)
    report["kib_per_session"] = round(
        (report["rss_sessions_mib"] - report["rss_devices_mib"]) * 1024 / held, 1
    )
    report["kib_per_connection"] = round(
        (report["rss_sessions_mib"] - report["rss_idle_mib"]) * 1024 / (devices + held), 1
    )
    return report


def connections_table(reports: dict[str, dict[str, Any]], opts: argparse.Namespace) -> str:
    kinds = list(reports)
    head = ["figure", *kinds]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]

    def row(label: str, cell: Any) -> None:
        lines.append("| " + " | ".join([label, *(cell(reports[k]) for k in kinds)]) + " |")

    def calls(key: str) -> Any:
        return lambda r: (
            f"p50 {r[key]['p50_ms']:.2f} ms, p99 {r[key]['p99_ms']:.2f} ms ({r[key]['calls_per_s']:,.0f}/s)"
        )

    row("RSS warm, nothing held", lambda r: f"{r['rss_idle_mib']:.1f} MiB")
    row(f"read, 1 session, nothing held ({opts.probe} calls)", calls("probe_idle"))
    row(
        f"{opts.devices:,} devices connected, discovered",
        lambda r: (
            f"{r['devices']['connected']:,} in {r['devices']['seconds']} s"
            + ("" if r["devices"]["discovery_done"] else f" ({r['devices']['tools_offered']:,} tools only)")
        ),
    )
    row(
        "RSS with the devices",
        lambda r: f"{r['rss_devices_mib']:.1f} MiB: **{r['kib_per_device']:.0f} KiB/device**",
    )
    row(
        f"RSS with {opts.mcp_sessions} `/mcp` sessions too",
        lambda r: f"{r['rss_sessions_mib']:.1f} MiB: **{r['kib_per_session']:.0f} KiB/session**",
    )
    row("memory per connection, all", lambda r: f"**{r['kib_per_connection']:.0f} KiB**")
    row(f"read, 1 session, all held ({opts.probe} calls)", calls("probe_held"))
    row(f"read, all {opts.mcp_sessions} sessions at once ({opts.calls_each} each)", calls("all_sessions"))
    row("the same again at once (sessions and tokens remembered)", calls("all_sessions_again"))
    if any(r["all_sessions"]["full_gc_ms"] is not None for r in reports.values()):
        row(
            "full GCs during the two (count, ms)",
            lambda r: " / ".join(fmt_gcs(r[k]["full_gc_ms"]) for k in ("all_sessions", "all_sessions_again")),
        )
    row("RSS at the end", lambda r: f"{r['rss_end_mib']:.1f} MiB")
    return "\n".join(lines)


# --- main -------------------------------------------------------------------------------------


def raise_open_files() -> int:
    """Raise this process's soft limit of open files to its hard one; the new soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


async def run_deployment(kind: str, opts: argparse.Namespace, results: dict[str, Any]) -> None:
    workdir = Path(tempfile.mkdtemp(prefix=f"bench_scale_{kind}_", dir="/tmp"))
    deployment = prepare_deployment(
        kind, workdir, root=opts.root, pg_server_url=opts.pg_server_url, redis_url=opts.redis_url
    )
    env = deployment.homehub_env
    if opts.gc_log:
        env = gc_logging(env, workdir / "gc")
    servers: list[Server] = []
    try:
        print(f"{kind}: {deployment.label}; logs in {workdir}", file=sys.stderr)
        if "processes" in opts.scenarios and kind == "postgres":
            servers = [
                Server(f"homehub-{i}", "daphne", APP, opts.root, env, workdir / f"p{i}.log") for i in (0, 1)
            ]
            for server in servers:
                await server.start()
            await asyncio.sleep(SETTLE_SECONDS)
            token = create_token(env, "bench_scale_processes", root=opts.root)
            database = urlsplit(env["DATABASE_URL"]).path.lstrip("/")
            results["processes"] = await processes(servers, token, database, opts)
            for server in servers:
                server.stop()
        if "connections" in opts.scenarios:
            servers = [Server("homehub", "daphne", APP, opts.root, env, workdir / "connections.log")]
            await servers[0].start()
            await asyncio.sleep(SETTLE_SECONDS)
            report = await connections(servers[0], env, opts)
            print(f"  connections: {json.dumps(report)}", file=sys.stderr)
            results.setdefault("connections", {})[kind] = report
    finally:
        for server in servers:
            server.stop()
        deployment.close()
        if not opts.keep:
            shutil.rmtree(workdir, ignore_errors=True)


async def main(opts: argparse.Namespace) -> int:
    started, load = time.perf_counter(), os.getloadavg()[0]
    open_files = raise_open_files()
    results: dict[str, Any] = {}
    for kind in opts.deployments.split(","):
        await run_deployment(kind, opts, results)
    took = time.perf_counter() - started
    print(
        f"\nScale under daphne. Machine: {machine()}; load average {load:.2f} at the start; "
        f"this client's open-file limit {open_files:,}. Run took {took:.0f} s.",
        flush=True,
    )
    all_met = True
    if "processes" in results:
        text, all_met = processes_table(results["processes"])
        print(
            f"\nTwo processes against one (PostgreSQL + Redis; {opts.sessions} `/mcp` sessions; "
            f"{opts.rounds} interleaved rounds of {opts.count} calls after {opts.warmup} warm-up "
            "calls; medians over the rounds, two/one as median (min-max) of the per-round ratios; "
            "server CPU sums both processes):\n"
        )
        print(text, flush=True)
    if "connections" in results:
        print(
            f"\nOne process holding {opts.devices:,} device WebSockets and {opts.mcp_sessions} "
            "initialized `/mcp` sessions (each its own keep-alive connection):\n"
        )
        print(connections_table(results["connections"], opts), flush=True)
    if opts.json:
        out = {**results, "processes": processes_json(results.get("processes", {}))}
        Path(opts.json).write_text(json.dumps(out, indent=1))
    if "processes" in results:
        print(
            f"\nTarget (issue 29): two processes >= {TARGET}x one for reads and writes: "
            f"{'met' if all_met else 'NOT met'}."
        )
    return 0 if all_met else 1


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sessions", type=int, default=32, help="`processes`: sessions per turn (32)")
    parser.add_argument("--count", type=int, default=2000, help="`processes`: measured calls per turn (2000)")
    parser.add_argument("--rounds", type=int, default=4, help="`processes`: interleaved rounds (4)")
    parser.add_argument("--warmup", type=int, default=200, help="`processes`: warm-up calls per turn (200)")
    parser.add_argument(
        "--warm", type=int, default=2000, help="calls warming fresh processes before any measure (2000)"
    )
    parser.add_argument("--devices", type=int, default=1000, help="`connections`: devices held (1000)")
    parser.add_argument("--mcp-sessions", type=int, default=200, help="`connections`: sessions held (200)")
    parser.add_argument("--probe", type=int, default=500, help="`connections`: the probe's calls (500)")
    parser.add_argument("--calls-each", type=int, default=10, help="`connections`: calls per session (10)")
    parser.add_argument("--connect-concurrency", type=int, default=100, help="device handshakes in flight")
    parser.add_argument("--discovery-timeout", type=float, default=90.0, help="seconds to wait for discovery")
    parser.add_argument(
        "--gc-log", action="store_true", help="log the servers' full garbage collections (gc.callbacks)"
    )
    add_deployment_options(parser)
    opts = parser.parse_args(argv)
    if (
        min(opts.sessions, opts.count, opts.rounds, opts.devices, opts.mcp_sessions, opts.probe, opts.warm)
        < 1
    ):
        parser.error("counts must be positive")
    if opts.sessions > SESSIONS_PER_TOKEN:
        parser.error(f"--sessions: at most {SESSIONS_PER_TOKEN}, the live sessions one token may have")
    check_deployment_options(parser, opts, SCENARIOS)
    return opts


if __name__ == "__main__":
    run_benchmark(main, parse_args())
