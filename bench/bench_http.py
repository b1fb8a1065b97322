"""MCP over the network: HomeHub's `/mcp` and `/ws/mcp/` against the official SDK's `MCPServer`,
with the ASGI server's own floor beside them.

For each ASGI server (daphne, uvicorn), three applications run side by side under the
same server, started with the same flags: HomeHub (`homehub.asgi:application`), the SDK
peer (`bench/peers/sdk_home_http.py`: `sdk_home_server`'s six tools in memory, served by
`MCPServer.streamable_http_app(json_response=True)`) and the floor
(`bench/peers/bare_asgi.py`: reads and parses each request, answers one fixed SSE event,
no auth, no sessions kept). The floor is what any application would get under that server
with this client, so `floor/SDK` is the best ratio any application could reach against
the SDK in a cell, and the floor's CPU per call about the server's own share of a call.
It is a floor for HTTP only: a WebSocket message skips the HTTP request and can cost less.
One raw asyncio client drives all three: HTTP/1.1 with keep-alive, one connection per
session, identical request headers, responses read whole (Content-Length or chunked) and
parsed as SSE or JSON by their content type; the SDK has no WebSocket, so HomeHub's
`/ws/mcp/` (one JSON-RPC message per text frame, the `websockets` client without
compression) is compared with the SDK's HTTP figure. Before measuring, the six tools must
answer alike on HomeHub (HTTP and WebSocket) and the SDK; the floor is not a home and
answers every tool the same, so it is left out of that check.

Scenarios: `get_all_states` (read) and `set_light_state` (write, alternating on/off);
modes: `seq` (1 session, one call in flight) and `16 sessions` (16 handshake-era sessions,
each with its own connection, each sequential). This machine's speed drifts by up to
±30 % from minute to minute, so every cell is measured in `--rounds` interleaved rounds
(HomeHub /mcp, HomeHub WebSocket, SDK, floor, then again), each turn on fresh sessions
with `--warmup` calls and then `--count` measured calls. Measured per turn: calls/s,
p50/p99 latency and server CPU per call (utime + stime of the server process and its
children, from /proc/<pid>/stat, before/after; the client's own CPU per call is shown too:
client and servers share the machine). The table shows per cell the median calls/s and
CPU per call of each side over the rounds, and each ratio as the median of the per-round
ratios with their min-max (a round's sides saw the machine at about the same speed).

HomeHub runs on a fresh temporary SQLite database (`--database-url`: another one, e.g. an
empty PostgreSQL database made for the run; migrated, seeded, one token with
scopes read,control), DJANGO_DEBUG=0 and MCP_RATE_LIMIT=0 (the per-token budget would
refuse the benchmark's calls), with its default SSE responses; `--homehub-json` sets
MCP_HTTP_JSON_RESPONSE=1.

    .venv/bin/python bench/bench_http.py                       # the whole comparison, ~1 minute
    .venv/bin/python bench/bench_http.py --count 200 --rounds 2 --servers daphne   # quick look
    .venv/bin/python bench/bench_http.py --servers daphne --only homehub --py-spy /tmp/hh.txt

Exit status 0 when every target of issue 7 is met by its median ratio (HomeHub's /mcp >=
1.5x the SDK's calls/s, its WebSocket >= 2x the SDK's HTTP figure, per ASGI server,
scenario and mode), 1 otherwise, 2 on a protocol failure.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import websockets
from harness import (
    PROTOCOL_VERSION,
    ROOT,
    ProtocolFailure,
    Run,
    arguments_for,
    cpu_seconds,
    create_token,
    fmt_ms,
    fmt_rate,
    fmt_ratios,
    free_port,
    jsonrpc_request,
    machine,
    median_cpu_per_call_us,
    median_rate,
    prepare_homehub,
    round_ratios,
    sequential,
    shape_check,
    start_py_spy,
)

PEERS = ROOT / "bench" / "peers"
BIN = Path(sys.executable).parent
ASGI_SERVERS = ("daphne", "uvicorn")
# The applications served, in the order each round measures them: (ASGI path, directory).
SIDES = {
    "homehub": ("homehub.asgi:application", ROOT),
    "sdk": ("sdk_home_http:app", PEERS),
    "floor": ("bare_asgi:app", PEERS),
}
SCENARIOS = [("get_all_states", "read"), ("set_light_state", "write")]
MODES = {"seq": 1, "16 sessions": 16}
# (target name, transport); every target is compared with the SDK over HTTP.
TARGETS = {"http": 1.5, "ws": 2.0}
LABELS = {"http": "HTTP /mcp", "ws": "WebSocket"}


# --- servers -----------------------------------------------------------------------------


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


# --- client ------------------------------------------------------------------------------


def _from_sse(body: bytes, request_id: int) -> dict[str, Any] | None:
    """The `event: message` (or unnamed) event answering `request_id`."""
    for block in body.replace(b"\r\n", b"\n").split(b"\n\n"):
        event, data = b"message", []
        for line in block.split(b"\n"):
            if line.startswith(b"data:"):
                data.append(line[5:].removeprefix(b" "))
            elif line.startswith(b"event:"):
                event = line[6:].strip()
        if event == b"message" and data and data != [b""]:
            message = json.loads(b"\n".join(data))
            if isinstance(message, dict) and message.get("id") == request_id:
                return message
    return None


class HttpSession:
    """One MCP session over one keep-alive HTTP/1.1 connection, one request at a time."""

    def __init__(self, name: str, port: int, token: str) -> None:
        self.name, self.port = name, port
        self._head = (
            f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            "Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"
            f"Authorization: Bearer {token}\r\nMCP-Protocol-Version: {PROTOCOL_VERSION}\r\n"
        ).encode()
        self._ids = 0
        self.session_id: str | None = None

    async def open(self) -> None:
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port, limit=1 << 22)
        self.writer.transport.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        init = await self.request(
            "initialize",
            {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "bench_http", "version": "1"},
            },
        )
        if "result" not in init or not self.session_id:
            raise ProtocolFailure(f"{self.name}: initialize failed: {init}")
        self._head += f"Mcp-Session-Id: {self.session_id}\r\n".encode()
        status, _, _ = await self._post(jsonrpc_request(None, "notifications/initialized"))
        if status != 202:
            raise ProtocolFailure(f"{self.name}: notifications/initialized -> {status}")

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(OSError):
            await self.writer.wait_closed()

    async def _post(self, body: bytes) -> tuple[int, dict[bytes, bytes], bytes]:
        self.writer.write(self._head + b"Content-Length: %d\r\n\r\n" % len(body) + body)
        reader = self.reader
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head[:-4].split(b"\r\n")
        status = int(lines[0].split(b" ", 2)[1])
        headers: dict[bytes, bytes] = {}
        for line in lines[1:]:
            key, _, value = line.partition(b":")
            headers[key.strip().lower()] = value.strip()
        if b"content-length" in headers:
            payload = await reader.readexactly(int(headers[b"content-length"]))
        elif headers.get(b"transfer-encoding", b"").lower() == b"chunked":
            parts = []
            while True:
                size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
                if size == 0:
                    while await reader.readuntil(b"\r\n") != b"\r\n":  # trailers
                        pass
                    break
                parts.append((await reader.readexactly(size + 2))[:-2])
            payload = b"".join(parts)
        else:
            raise ProtocolFailure(f"{self.name}: response without length ({status})")
        if self.session_id is None and b"mcp-session-id" in headers:
            self.session_id = headers[b"mcp-session-id"].decode()
        return status, headers, payload

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._ids += 1
        status, headers, payload = await self._post(jsonrpc_request(self._ids, method, params))
        if headers.get(b"content-type", b"").startswith(b"text/event-stream"):
            message = _from_sse(payload, self._ids)
        else:
            message = json.loads(payload) if payload else None
        if status != 200 or not isinstance(message, dict):
            raise ProtocolFailure(f"{self.name}: {method} -> HTTP {status}: {payload[:300]!r}")
        return message

    async def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return await self.request("tools/call", {"name": tool, "arguments": arguments})

    async def timed_call(self, tool: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], float]:
        start = time.perf_counter()
        message = await self.call(tool, arguments)
        return message, time.perf_counter() - start


class WsSession:
    """One MCP session over HomeHub's WebSocket (one connection)."""

    def __init__(self, name: str, port: int, token: str) -> None:
        self.name, self.port, self.token = name, port, token
        self._ids = 0

    async def open(self) -> None:
        self.ws = await websockets.connect(
            f"ws://127.0.0.1:{self.port}/ws/mcp/",
            additional_headers={"Authorization": f"Bearer {self.token}"},
            subprotocols=["mcp"],
            compression=None,
            max_size=1 << 22,
        )
        init = await self.request(
            "initialize",
            {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "bench_http", "version": "1"},
            },
        )
        if "result" not in init:
            raise ProtocolFailure(f"{self.name}: initialize failed: {init}")
        await self.ws.send(jsonrpc_request(None, "notifications/initialized").decode())

    async def close(self) -> None:
        await self.ws.close()

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._ids += 1
        request_id = self._ids
        await self.ws.send(jsonrpc_request(request_id, method, params).decode())
        while True:  # skip notifications
            message = json.loads(await asyncio.wait_for(self.ws.recv(), 30))
            if message.get("id") == request_id:
                return message

    async def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return await self.request("tools/call", {"name": tool, "arguments": arguments})

    async def timed_call(self, tool: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], float]:
        start = time.perf_counter()
        message = await self.call(tool, arguments)
        return message, time.perf_counter() - start


async def open_sessions(kind: str, name: str, port: int, token: str, count: int) -> list:
    cls = WsSession if kind == "ws" else HttpSession
    sessions = [cls(name, port, token) for _ in range(count)]
    for session in sessions:
        await session.open()
    return sessions


async def close_all(sessions: list) -> None:
    """Close the sessions and empty the list."""
    for session in sessions:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(session.close(), 5)
    sessions.clear()


async def measure(server: Server, sessions: list, tool: str, n: int) -> tuple[Run, float]:
    """`n` calls spread over the sessions, each sequential; returns the run and client CPU."""
    args = arguments_for(tool)
    latencies: list[float] = []
    share, extra = divmod(n, len(sessions))
    cpu0, client0, wall0 = server.cpu(), time.process_time(), time.perf_counter()
    failures = await asyncio.gather(
        *(
            sequential(session.timed_call, tool, args, share + (i < extra), latencies)
            for i, session in enumerate(sessions)
        )
    )
    wall = time.perf_counter() - wall0
    run = Run(n, wall, server.cpu() - cpu0, latencies, sum(failures))
    return run, time.process_time() - client0


# --- report ------------------------------------------------------------------------------

Key = tuple[str, str, str, str, str]  # (asgi, side, transport, scenario, mode)


def _cells(runs: list[Run]) -> list[str]:
    return [fmt_rate(median_rate(runs)), f"{median_cpu_per_call_us(runs):,.0f}"]


def table(results: dict[Key, list[Run]], asgis: list[str], sides: list[str]) -> tuple[str, bool]:
    """Markdown table, one row per HomeHub transport (SDK and floor figures repeated), the
    medians over the rounds; (text, every HomeHub target met by its median ratio)."""
    compare, floored = {"homehub", "sdk"} <= set(sides), {"floor", "sdk"} <= set(sides)
    head = ["server", "scenario", "mode"]
    if "homehub" in sides:
        head += ["HomeHub via", "HomeHub calls/s", "CPU µs/call"]
    if "sdk" in sides:
        head += ["SDK HTTP calls/s", "CPU µs/call"]
    if "floor" in sides:
        head += ["floor calls/s", "CPU µs/call"]
    if compare:
        head += ["HomeHub/SDK", "target", ""]
    if floored:
        head += ["floor/SDK"]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    all_met = True
    for asgi in asgis:
        for scenario, _kind in SCENARIOS:
            for mode in MODES:
                sdk = results.get((asgi, "sdk", "http", scenario, mode))
                floor = results.get((asgi, "floor", "http", scenario, mode))
                for transport in TARGETS:
                    ours = results.get((asgi, "homehub", transport, scenario, mode))
                    if ours is None and ("homehub" in sides or transport != "http"):
                        continue
                    row = [asgi, scenario, mode]
                    if ours is not None:
                        row += [LABELS[transport], *_cells(ours)]
                    row += _cells(sdk) if sdk else []
                    row += _cells(floor) if floor else []
                    if compare and ours and sdk:
                        ratios = round_ratios(ours, sdk)
                        met = statistics.median(ratios) >= TARGETS[transport]
                        all_met &= met
                        row += [fmt_ratios(ratios), f">= {TARGETS[transport]}x", "pass" if met else "FAIL"]
                    if floored and floor and sdk:
                        row.append(fmt_ratios(round_ratios(floor, sdk)))
                    lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines), all_met


# --- main --------------------------------------------------------------------------------


async def measure_turn(
    asgi: str, server: Server, transport: str, token: str, width: int, cell: tuple[str, str], opts
) -> Run:
    """One side's turn in a cell: fresh sessions (only this turn's are open while it runs:
    an open WebSocket session hears every write's broadcast, which costs HomeHub), the
    warm-up, `--count` measured calls."""
    scenario, mode = cell
    sessions = await open_sessions(transport, server.name, server.port, token, width)
    try:
        if opts.warmup:
            await measure(server, sessions, scenario, opts.warmup)
        run, client_cpu = await measure(server, sessions, scenario, opts.count)
    finally:
        await close_all(sessions)
    if run.failures:
        raise ProtocolFailure(f"{server.name}: {run.failures} failed calls in {scenario}/{mode}")
    print(
        f"  {asgi:7} {server.name:7} {transport:4} {scenario:15} {mode:11} "
        f"{fmt_rate(run.rate):>6} calls/s p50 {fmt_ms(run.percentile(0.5))} ms "
        f"p99 {fmt_ms(run.percentile(0.99))} ms server CPU {run.cpu_per_call_us:,.0f} "
        f"µs/call (client {client_cpu / run.calls * 1e6:,.0f})",
        file=sys.stderr,
    )
    return run


async def run_asgi(
    asgi: str,
    sides: list[str],
    homehub_env: dict[str, str] | None,
    token: str,
    workdir: Path,
    opts: argparse.Namespace,
    results: dict[Key, list[Run]],
) -> None:
    servers: dict[str, Server] = {}
    profiler: subprocess.Popen | None = None
    sessions: list = []
    try:
        for side in sides:
            app, app_dir = SIDES[side]
            env = homehub_env if side == "homehub" else dict(os.environ)
            assert env is not None
            servers[side] = Server(side, asgi, app, app_dir, env, workdir / f"{side}.{asgi}.log")
        for server in servers.values():
            await server.start()
        # The two homes must answer alike; the floor is no home (one answer for every tool).
        homes = [name for name in servers if name != "floor"]
        shape = [(await open_sessions("http", n, servers[n].port, token, 1))[0] for n in homes]
        if "homehub" in servers:
            shape += await open_sessions("ws", "homehub-ws", servers["homehub"].port, token, 1)
        sessions += shape
        for session in shape:  # the write cells may leave `salon` on (odd counts per session)
            await session.call("set_light_state", {"name": "salon", "on": False})
        problems = await shape_check(shape)
        if problems:
            raise ProtocolFailure("shape check failed:\n  " + "\n  ".join(problems))
        if shape:
            names = ", ".join(s.name for s in shape)
            print(f"{asgi}: the six tools answer identically on {names}", file=sys.stderr)
        await close_all(sessions)
        if opts.py_spy and "homehub" in servers:
            profiler = start_py_spy(opts.py_spy, servers["homehub"].proc.pid)

        turns = [(side, "http") for side in servers]
        if "homehub" in servers and not opts.no_ws:
            turns.insert(1, ("homehub", "ws"))
        for mode, width in MODES.items():
            for scenario, _kind in SCENARIOS:
                # Rounds interleaved (A B C A B C ...), so drift hits every side alike.
                for _ in range(opts.rounds):
                    for side, transport in turns:
                        run = await measure_turn(
                            asgi, servers[side], transport, token, width, (scenario, mode), opts
                        )
                        results.setdefault((asgi, side, transport, scenario, mode), []).append(run)
    finally:
        await close_all(sessions)
        if profiler is not None:
            profiler.send_signal(signal.SIGINT)
            profiler.wait(60)
            print(f"py-spy samples of HomeHub under {asgi} (raw, folded): {opts.py_spy}", file=sys.stderr)
        for server in servers.values():
            server.stop()


async def main(opts: argparse.Namespace) -> int:
    sides = list(SIDES) if opts.only is None else [opts.only]
    asgis = opts.servers.split(",")
    workdir = Path(tempfile.mkdtemp(prefix="bench_http_", dir="/tmp"))
    started = time.perf_counter()
    results: dict[Key, list[Run]] = {}
    homehub_env = None
    token = "none"
    try:
        if "homehub" in sides:
            homehub_env = prepare_homehub(
                workdir, sys.executable, debug=False, database_url=opts.database_url
            )
            homehub_env["MCP_RATE_LIMIT"] = "0"
            homehub_env["MCP_HTTP_JSON_RESPONSE"] = "1" if opts.homehub_json else "0"
            token = create_token(homehub_env, "bench_http")
        for asgi in asgis:
            await run_asgi(asgi, sides, homehub_env, token, workdir, opts, results)
    finally:
        if opts.keep:
            print(f"kept {workdir}", file=sys.stderr)
        else:
            shutil.rmtree(workdir, ignore_errors=True)

    both = {"homehub", "sdk"} <= set(sides)
    text, all_met = table(results, asgis, sides)
    answers = {
        "homehub": f"HomeHub {'JSON' if opts.homehub_json else 'SSE'}",
        "sdk": "SDK JSON",
        "floor": "floor (bench/peers/bare_asgi.py) SSE",
    }
    print(
        f"\nMCP tools/call over Streamable HTTP and WebSocket: per cell {opts.rounds} interleaved "
        f"rounds of {opts.count} calls per side (after {opts.warmup} warm-up calls each); medians "
        f"over the rounds, ratios as median (min-max) of the per-round ratios. "
        f"{', '.join(answers[side] for side in sides)} responses. Machine: {machine()}. "
        f"Run took {time.perf_counter() - started:.0f} s.\n"
    )
    print(text, flush=True)
    if both:
        print(
            f"\nTargets (issue 7), on the median ratio: HomeHub's /mcp >= {TARGETS['http']}x the SDK's "
            f"calls/s, its WebSocket >= {TARGETS['ws']}x the SDK's HTTP figure: "
            f"{'all met' if all_met else 'NOT all met'}."
        )
        return 0 if all_met else 1
    return 0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--count", type=int, default=1000, help="measured calls per side and round (default 1000)"
    )
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds per cell (default 3)")
    parser.add_argument(
        "--warmup", type=int, default=100, help="warm-up calls before each measurement (default 100)"
    )
    parser.add_argument(
        "--servers", default=",".join(ASGI_SERVERS), help="ASGI servers, comma-separated (daphne,uvicorn)"
    )
    parser.add_argument("--only", choices=list(SIDES), help="benchmark one side only")
    parser.add_argument("--no-ws", action="store_true", help="skip HomeHub's WebSocket")
    parser.add_argument(
        "--homehub-json", action="store_true", help="HomeHub answers in JSON (MCP_HTTP_JSON_RESPONSE=1)"
    )
    parser.add_argument("--py-spy", metavar="FILE", help="record py-spy samples of HomeHub into FILE")
    parser.add_argument(
        "--database-url",
        metavar="URL",
        help="HomeHub's database instead of a fresh SQLite file (e.g. an empty PostgreSQL database)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory (database, logs)")
    opts = parser.parse_args(argv)
    if opts.count < 16 or opts.warmup < 0 or opts.rounds < 1:
        parser.error("--count must be at least 16, --rounds at least 1, --warmup not negative")
    if any(s not in ASGI_SERVERS for s in opts.servers.split(",")):
        parser.error(f"--servers: choose from {', '.join(ASGI_SERVERS)}")
    if opts.py_spy and len(opts.servers.split(",")) > 1:
        parser.error("--py-spy needs a single --servers")
    return opts


if __name__ == "__main__":
    options = parse_args()
    try:
        sys.exit(asyncio.run(main(options)))
    except ProtocolFailure as exc:
        print(f"protocol failure: {exc}", file=sys.stderr)
        sys.exit(2)
