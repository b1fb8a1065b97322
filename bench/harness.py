"""What the MCP benchmarks share: the measured loop, run figures and rounds of them, the
shape check, the HomeHub set-up, the report helpers and py-spy.

`bench_stdio.py` and `bench_http.py` import it as a sibling module (they run as scripts from
`bench/`), so both drive their servers with the same loop and report the same figures.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import platform
import secrets
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
ASGI_SERVERS = ("daphne", "uvicorn")
# After the shape check, before measuring: what a process does once at start (its change feed
# settling, its first reads) is not what a call costs in a hub that has been running.
SETTLE_SECONDS = 2.0
PROTOCOL_VERSION = "2025-11-25"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")

Arguments = Callable[[int], dict[str, Any]]
# A client's call: (tool, arguments) -> (the JSON-RPC response, latency in seconds).
TimedCall = Callable[[str, dict[str, Any]], Awaitable[tuple[dict[str, Any], float]]]


class ProtocolFailure(Exception):
    pass


def run_benchmark(main: Callable[[Any], Awaitable[int]], opts: Any) -> None:
    """Run a benchmark's `main(opts)` and exit with its status: 2 on a protocol failure."""
    try:
        sys.exit(asyncio.run(main(opts)))
    except ProtocolFailure as exc:
        print(f"protocol failure: {exc}", file=sys.stderr)
        sys.exit(2)


def arguments_for(tool: str) -> Arguments:
    """The i-th call's arguments: writes alternate `salon` on and off, reads take none."""
    if tool == "set_light_state":
        on_off = ({"name": "salon", "on": True}, {"name": "salon", "on": False})
        return lambda i: on_off[i & 1]
    return lambda i: {}


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process, in seconds (the resolution is one clock tick)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # fields 14 and 15 of proc(5)


def failed(message: dict[str, Any]) -> int:
    """1 when a `tools/call` response is not a successful result."""
    result = message.get("result")
    return int(not isinstance(result, dict) or result.get("isError") is not False)


@dataclass
class Run:
    calls: int
    wall: float
    server_cpu: float
    latencies: list[float] = field(repr=False)
    failures: int = 0

    @property
    def rate(self) -> float:
        return self.calls / self.wall

    def percentile(self, q: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    @property
    def cpu_per_call_us(self) -> float:
        return self.server_cpu / self.calls * 1e6


def median_rate(runs: list[Run]) -> float:
    return statistics.median(run.rate for run in runs)


def median_cpu_per_call_us(runs: list[Run]) -> float:
    return statistics.median(run.cpu_per_call_us for run in runs)


def round_ratios(ours: list[Run], theirs: list[Run]) -> list[float]:
    """calls/s ratios of two sides measured alternately, each round against the same round:
    both saw the machine at about the same speed, which a ratio of medians would not ensure."""
    return [a.rate / b.rate for a, b in zip(ours, theirs, strict=True)]


async def sequential(call: TimedCall, tool: str, args: Arguments, n: int, latencies: list[float]) -> int:
    """`n` calls, one in flight; appends each latency, returns how many failed."""
    failures = 0
    for i in range(n):
        message, latency = await call(tool, args(i))
        latencies.append(latency)
        failures += failed(message)
    return failures


# --- set-up ------------------------------------------------------------------------------


def prepare_homehub(
    workdir: Path, python: str, debug: bool, database_url: str | None = None, root: Path = ROOT
) -> dict[str, str]:
    """A fresh SQLite database in `workdir` (or the one at `database_url`, which should be an
    empty database made for the run), migrated and seeded by the HomeHub tree at `root`;
    returns HomeHub's environment."""
    env = dict(os.environ)
    env["DATABASE_URL"] = database_url or f"sqlite:///{workdir / 'homehub.sqlite3'}"
    # As deployed: DEBUG keeps every SQL statement in memory (and on SQLite runs one more
    # query per statement to quote its parameters), which is for development only.
    env["DJANGO_DEBUG"] = "1" if debug else "0"
    env.setdefault("DJANGO_SECRET_KEY", secrets.token_urlsafe(50))  # required without DEBUG
    for argv in (["migrate", "--noinput", "-v", "0"], ["seed_home"]):
        subprocess.run([python, "manage.py", *argv], cwd=root, env=env, check=True, stdout=subprocess.DEVNULL)
    return env


def jsonrpc_request(request_id: int | None, method: str, params: dict[str, Any] | None = None) -> bytes:
    """A compact JSON-RPC request (a notification without `request_id`), as bytes."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if request_id is not None:
        message["id"] = request_id
    if params is not None:
        message["params"] = params
    return json.dumps(message, separators=(",", ":")).encode()


def create_token(env: dict[str, str], name: str, root: Path = ROOT, scopes: str = "read,control") -> str:
    """A new MCP token with `scopes` in HomeHub's database of `env`."""
    argv = [sys.executable, "manage.py", "create_mcp_token", name, "--scopes", scopes]
    out = subprocess.run(argv, cwd=root, env=env, check=True, capture_output=True, text=True).stdout
    return out.strip().splitlines()[-1]


SHAPE_CALLS = [
    ("get_presence", {}),
    ("get_alarm_status", {}),
    ("list_lights_on", {}),
    ("get_all_states", {}),
    ("set_light_state", {"name": "cocina", "on": True}),
    ("list_lights_on", {}),
    ("set_light_state", {"name": "cocina", "on": False}),
    ("set_light_state", {"name": "nope", "on": True}),
    ("get_alarm_status", {}),
    ("get_all_states", {}),
]
# set_alarm_state is left out: over HTTP and WebSocket HomeHub waits for a person to confirm it
# (mcp_endpoint.controls.confirmation), which the SDK peers do not.


async def shape_check(clients: list[Any]) -> list[str]:
    """Call every tool on every server (each client has `name` and `call(tool, arguments)`);
    the structured results must be identical."""
    seen: dict[str, list[Any]] = {}
    for client in clients:
        outcomes = []
        for tool, arguments in SHAPE_CALLS:
            message = await client.call(tool, arguments)
            if "result" not in message:
                raise ProtocolFailure(f"{client.name}: {tool} -> {message}")
            result = message["result"]
            outcomes.append((result.get("isError"), result.get("structuredContent")))
        seen[client.name] = outcomes
    problems = []
    names = list(seen)
    for other in names[1:]:
        for (tool, arguments), a, b in zip(SHAPE_CALLS, seen[names[0]], seen[other], strict=True):
            if a != b:
                problems.append(f"{tool}({arguments}): {names[0]}={a} {other}={b}")
    return problems


# --- report ------------------------------------------------------------------------------


def fmt_rate(value: float) -> str:
    return f"{value:,.0f}"


def fmt_ms(value: float) -> str:
    return f"{value * 1e3:.2f}"


def fmt_ratios(ratios: list[float]) -> str:
    """The median ratio and the spread of the rounds: `1.52x (1.31-1.70)`."""
    median = f"{statistics.median(ratios):.2f}x"
    return median if len(ratios) == 1 else f"{median} ({min(ratios):.2f}-{max(ratios):.2f})"


def fmt_latency(runs: list[Run]) -> str:
    """`p50 / p99` in ms of the median round (by calls/s)."""
    middle = sorted(runs, key=lambda run: run.rate)[len(runs) // 2]
    return f"{fmt_ms(middle.percentile(0.50))} / {fmt_ms(middle.percentile(0.99))}"


def target_cells(ours: list[Run] | None, theirs: list[Run] | None, target: float) -> tuple[list[str], bool]:
    """A table's ratio, target and verdict cells for HomeHub's rounds against a peer's, and
    whether the median ratio meets the target (True when either side was not measured)."""
    if not (ours and theirs):
        return ["", f">= {target}x", ""], True
    ratios = round_ratios(ours, theirs)
    met = statistics.median(ratios) >= target
    return [fmt_ratios(ratios), f">= {target}x", "pass" if met else "FAIL"], met


def figures(runs: list[Run], peer: list[Run] | None) -> dict[str, Any]:
    """A cell's rounds for `--json`: calls/s, CPU µs per call, p50 ms and, against `peer`'s
    rounds when given, the per-round ratios."""
    return {
        "rates": [round(run.rate, 1) for run in runs],
        "cpu_us": [round(run.cpu_per_call_us, 1) for run in runs],
        "p50_ms": [round(run.percentile(0.5) * 1e3, 3) for run in runs],
        "p99_ms": [round(run.percentile(0.99) * 1e3, 3) for run in runs],
        "ratios": [round(r, 3) for r in round_ratios(runs, peer)] if peer else None,
    }


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return f"{os.cpu_count()} cores ({cpu}), Python {platform.python_version()}, Linux {platform.release()}"


def start_py_spy(output: str, pid: int) -> subprocess.Popen:
    """Sample a server (every thread) for the rest of the run, as raw folded stacks."""
    exe = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    argv = [exe, "record", "--pid", str(pid), "--format", "raw", "--threads", "--rate", "250"]
    return subprocess.Popen([*argv, "--output", output], stdout=subprocess.DEVNULL)


# --- processes on loopback: ports, memory, PostgreSQL, Mosquitto ------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def rss_mib(pid: int) -> float:
    """Resident memory of a process in MiB (0 when it has gone)."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def create_database(url: str, name: str, template: str | None = None) -> tuple[str, Callable[[], None]]:
    """A fresh database `name` on the PostgreSQL server of `url` (a copy of the database
    `template` when given, which nobody may be connected to); returns its URL and a drop
    function (which also ends whatever connections are left)."""
    import psycopg

    parts = urlsplit(url)
    admin = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else ""))

    def drop() -> None:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    return urlunsplit(parts._replace(path=f"/{name}")), drop


def production_database(server_url: str | None, folder: Path, name: str) -> Callable[[], None] | None:
    """Point this process (and the workers it starts) at a throwaway database with production
    settings: a database `name` created on the PostgreSQL server of `server_url`, or SQLite in
    `folder`. Returns the drop function of a PostgreSQL one."""
    drop = None
    if server_url:
        database_url, drop = create_database(server_url, name)
    else:
        database_url = f"sqlite:///{folder}/bench.sqlite3"
    os.environ.update(DATABASE_URL=database_url, DJANGO_DEBUG="0", DJANGO_SETTINGS_MODULE="homehub.settings")
    os.environ.setdefault("DJANGO_SECRET_KEY", secrets.token_urlsafe(50))  # required without DEBUG
    os.environ.pop("REDIS_URL", None)
    return drop


# --- servers ---------------------------------------------------------------------------------


def server_argv(asgi: str, app: str, port: int, app_dir: Path) -> list[str]:
    """The same flags for both sides: loopback, no access log, one process."""
    if asgi == "daphne":
        return [str(BIN / "daphne"), "-v", "0", "-b", "127.0.0.1", "-p", str(port), app]
    return [
        sys.executable,
        "-m",
        "uvicorn",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--app-dir",
        str(app_dir),
        "--log-level",
        "warning",
        "--no-access-log",
        app,
    ]


class Server:
    def __init__(self, name: str, asgi: str, app: str, app_dir: Path, env: dict[str, str], log: Path):
        self.name, self.asgi = name, asgi
        self.port = free_port()
        self.argv = server_argv(asgi, app, self.port, app_dir)
        self.env, self.cwd, self.log_path = env, app_dir, log
        self.proc: subprocess.Popen | None = None

    async def start(self) -> None:
        self._log = self.log_path.open("wb")
        self.proc = subprocess.Popen(
            self.argv, cwd=self.cwd, env=self.env, stdout=self._log, stderr=subprocess.STDOUT
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ProtocolFailure(f"{self.name} exited: see {self.log_path}")
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", self.port)
            except OSError:
                await asyncio.sleep(0.1)
                continue
            writer.close()
            return
        raise ProtocolFailure(f"{self.name} did not listen on {self.port} within 60 s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        with contextlib.suppress(AttributeError):
            self._log.close()

    def cpu(self) -> float:
        """CPU seconds of the server process and its descendants."""
        assert self.proc is not None
        pids, total = [self.proc.pid], 0.0
        children: dict[int, list[int]] = {}
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                with contextlib.suppress(OSError, ValueError, IndexError):
                    stat = (entry / "stat").read_text()
                    ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
                    children.setdefault(ppid, []).append(int(entry.name))
        while pids:
            pid = pids.pop()
            with contextlib.suppress(OSError):
                total += cpu_seconds(pid)
            pids.extend(children.get(pid, ()))
        return total


# --- where HomeHub runs: the two deployments the MCP benchmarks measure ----------------------

DEPLOYMENTS = ("sqlite", "postgres")
PG_SERVER_URL = "postgres://postgres@127.0.0.1:5432/postgres"
REDIS_BENCH_URL = "redis://127.0.0.1:6379/8"  # a Redis database of the benchmarks' own, flushed


def add_deployment_options(parser: Any) -> None:
    """The options the MCP benchmarks share: where HomeHub runs, which tree, what to keep."""
    parser.add_argument(
        "--deployments", default=",".join(DEPLOYMENTS), help="sqlite, postgres or both (default)"
    )
    parser.add_argument("--scenarios", help="comma-separated scenario names (default: all)")
    parser.add_argument("--root", type=Path, default=ROOT, help="the HomeHub tree to run (default: this one)")
    parser.add_argument("--pg-server-url", default=PG_SERVER_URL, help="PostgreSQL server for `postgres`")
    parser.add_argument("--redis-url", default=REDIS_BENCH_URL, help="a Redis database of its own (flushed)")
    parser.add_argument("--json", metavar="FILE", help="also write every cell's figures as JSON")
    parser.add_argument(
        "--keep", action="store_true", help="keep the temporary directories (databases, logs)"
    )


def check_deployment_options(parser: Any, opts: Any, scenarios: list[str]) -> None:
    """Validate and normalise what `add_deployment_options` added (`scenarios`: the known ones)."""
    if any(d not in DEPLOYMENTS for d in opts.deployments.split(",")):
        parser.error(f"--deployments: choose from {', '.join(DEPLOYMENTS)}")
    opts.scenarios = opts.scenarios.split(",") if opts.scenarios else scenarios
    if any(sc not in scenarios for sc in opts.scenarios):
        parser.error(f"--scenarios: choose from {', '.join(scenarios)}")
    opts.root = opts.root.resolve()


@dataclass
class Deployment:
    """HomeHub as it runs in one of the two supported set-ups, with the write peer's database
    beside it:

    - `sqlite`: `make run`'s defaults: a SQLite file, no Redis (the database channel layer),
      one serving process;
    - `postgres`: PostgreSQL and Redis (the channel layer and the cache), two serving
      processes, as docs/DEPLOY.md deploys it.

    The peer's database is a copy of HomeHub's once migrated and seeded, on the same server:
    a SQLite file in the same folder, or a database on the same PostgreSQL server.
    """

    kind: str
    homehub_env: dict[str, str]
    peer_env: dict[str, str]
    processes: int
    cleanup: list[Callable[[], None]] = field(default_factory=list)

    @property
    def label(self) -> str:
        if self.kind == "sqlite":
            return "SQLite, database channel layer, 1 serving process"
        return f"PostgreSQL + Redis, {self.processes} serving processes"

    def close(self) -> None:
        while self.cleanup:
            with contextlib.suppress(Exception):
                self.cleanup.pop()()


def prepare_deployment(
    kind: str,
    workdir: Path,
    *,
    root: Path = ROOT,
    pg_server_url: str = PG_SERVER_URL,
    redis_url: str = REDIS_BENCH_URL,
) -> Deployment:
    """A fresh database (and Redis) for HomeHub's tree at `root`, migrated and seeded, with
    production settings (DJANGO_DEBUG=0, no rate limit: the budget would refuse a benchmark),
    and the peer's copy of it."""
    workdir.mkdir(parents=True, exist_ok=True)
    cleanup: list[Callable[[], None]] = []
    saved_redis = os.environ.pop("REDIS_URL", None)  # the outer environment's stays out of it
    try:
        if kind == "sqlite":
            env = prepare_homehub(workdir, sys.executable, debug=False, root=root)
            peer_file = workdir / "peer.sqlite3"
            source = sqlite3.connect(env["DATABASE_URL"].removeprefix("sqlite://"))
            with contextlib.closing(source), contextlib.closing(sqlite3.connect(peer_file)) as copy:
                source.backup(copy)
            peer_url = f"sqlite:///{peer_file}"
            processes = 1
        elif kind == "postgres":
            name = f"homehub_bench_{os.getpid()}"
            database_url, drop = create_database(pg_server_url, name)
            cleanup.append(drop)
            env = prepare_homehub(workdir, sys.executable, debug=False, database_url=database_url, root=root)
            peer_url, drop_peer = create_database(pg_server_url, f"{name}_peer", template=name)
            cleanup.append(drop_peer)
            import redis

            flush = redis.Redis.from_url(redis_url).flushdb
            flush()
            cleanup.append(flush)
            env["REDIS_URL"] = redis_url
            processes = 2
        else:
            raise ValueError(f"unknown deployment {kind!r}: {', '.join(DEPLOYMENTS)}")
    except BaseException:
        for step in reversed(cleanup):
            with contextlib.suppress(Exception):
                step()
        raise
    finally:
        if saved_redis is not None:
            os.environ["REDIS_URL"] = saved_redis
    env["MCP_RATE_LIMIT"] = "0"
    peer_env = {key: value for key, value in os.environ.items() if key != "REDIS_URL"}
    peer_env["PEER_DATABASE_URL"] = peer_url
    return Deployment(kind, env, peer_env, processes, cleanup)


class Mosquitto:
    """A private, anonymous Mosquitto on a free loopback port with the shipped queue and
    persistence settings (`deploy/mosquitto/mosquitto.conf`), its database in `folder`: a
    clean stop saves sessions and queued messages, and `start` again restores them on the
    same port."""

    SKIPPED = {"listener", "persistence_location", "password_file", "acl_file", "allow_anonymous"}

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.url = f"mqtt://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None
        shipped = (ROOT / "deploy" / "mosquitto" / "mosquitto.conf").read_text().splitlines()
        lines = [line for line in shipped if line.split(" ", 1)[0] not in self.SKIPPED]
        lines += [  # what Debian's main file sets, the shipped file being a conf.d part
            f"listener {self.port} 127.0.0.1",
            "persistence true",
            f"persistence_location {folder}/",
            "allow_anonymous true",
            "user root",  # as root it would switch to a user that cannot write `folder`
        ]
        self.config = folder / "mosquitto.conf"
        self.config.write_text("\n".join(lines) + "\n")
        self.log = folder / "mosquitto.log"

    def start(self) -> Mosquitto:
        exe = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen([exe, "-c", str(self.config)], stdout=log, stderr=log)
        deadline = time.monotonic() + 15
        while self.proc.poll() is None and time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), 0.5):
                return self
            time.sleep(0.05)
        raise RuntimeError(f"mosquitto did not start: see {self.log}")

    def stop(self, crash: bool = False) -> None:
        """A clean stop (SIGTERM): Mosquitto writes its persistence file first; or a crash
        (SIGKILL): what changed since its last autosave is gone."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill() if crash else self.proc.terminate()
            self.proc.wait(15)
