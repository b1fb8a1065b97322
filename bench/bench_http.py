"""MCP over the network: HomeHub's `/mcp` and `/ws/mcp/` against the official SDK's `MCPServer`,
on both of HomeHub's deployments, with the ASGI server's own floor beside them.

Deployments (`--deployments`, both by default; `bench/harness.py`'s `Deployment`):

- `sqlite`: `make run`'s defaults: a SQLite file, the database channel layer, one daphne;
- `postgres`: PostgreSQL and Redis, two daphne processes, the sessions spread over both.

Sides, each served by the same ASGI server with the same flags, as many processes as
HomeHub has in the deployment (sessions spread over them alike):

- HomeHub (`homehub.asgi:application`), over `/mcp` and over `/ws/mcp/`;
- reads' peer: the SDK's `MCPServer` with the six tools in memory
  (`bench/peers/sdk_home_http.py`, `streamable_http_app(json_response=True)`, stateful);
- writes' peer: the same SDK server whose writes commit first, as HomeHub's do: the light's
  row and one audit row in one transaction per call, with the driver directly, in a copy of
  HomeHub's database on the same server (`bench/peers/sdk_durable_http.py`);
- the floor (`bench/peers/bare_asgi.py`): reads and parses each request, answers one fixed
  SSE event, no auth, no sessions kept. What any application would get under that server
  with this client: `floor/peer` is the best ratio any application could reach in a cell
  over HTTP (a WebSocket message skips the HTTP request and can cost less).

One raw asyncio client drives them all: HTTP/1.1 with keep-alive, one connection per
session, identical request headers, responses read whole (Content-Length or chunked) and
parsed as SSE or JSON by their content type; the SDK has no WebSocket, so HomeHub's
`/ws/mcp/` (one JSON-RPC message per text frame, the `websockets` client without
compression) is compared with the peer's HTTP figure. Before measuring, the six tools must
answer alike on HomeHub (HTTP and WebSocket) and both peers.

Scenarios: `get_all_states` (read, against the in-memory peer) and `set_light_state`
(write, alternating on/off, against the durable peer); modes: `seq` (1 session, one call in
flight) and `16 sessions` (16 handshake-era sessions, each with its own connection, each
sequential). This machine's speed drifts by up to ±30 % from minute to minute, so every
cell is measured in `--rounds` interleaved rounds (HomeHub /mcp, HomeHub WebSocket, peer,
floor, then again), each turn on fresh sessions with `--warmup` calls and then `--count`
measured calls. Measured per turn: calls/s, p50/p99 latency and server CPU per call (utime
+ stime of the side's processes and their children, from /proc/<pid>/stat; a database
server's own CPU is not in it). The table shows per cell the median calls/s and CPU per
call of each side over the rounds, and each ratio as the median of the per-round ratios
with their min-max (a round's sides saw the machine at about the same speed).

HomeHub runs with DJANGO_DEBUG=0, MCP_RATE_LIMIT=0 (the per-token budget would refuse the
benchmark's calls) and its default SSE answers (`--homehub-json`: MCP_HTTP_JSON_RESPONSE=1),
one token with scopes read,control; `--root DIR` runs another HomeHub tree (an older
commit's worktree) with this benchmark.

    .venv/bin/python bench/bench_http.py                         # both deployments, ~3 minutes
    .venv/bin/python bench/bench_http.py --deployments sqlite --count 300 --rounds 2   # a look
    .venv/bin/python bench/bench_http.py --deployments postgres --only homehub --py-spy /tmp/hh

Exit status 0 when every target (issue 16) is met by its median ratio: reads over `/mcp`
>= 1.5x the SDK, over the WebSocket >= 2x the SDK's HTTP figure; writes >= 1.5x the durable
peer over both; 1 otherwise, 2 on a protocol failure.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import websockets
from harness import (
    ASGI_SERVERS,
    PROTOCOL_VERSION,
    ROOT,
    SETTLE_SECONDS,
    Deployment,
    ProtocolFailure,
    Run,
    Server,
    add_deployment_options,
    arguments_for,
    check_deployment_options,
    create_token,
    figures,
    fmt_latency,
    fmt_ms,
    fmt_rate,
    fmt_ratios,
    jsonrpc_request,
    machine,
    median_cpu_per_call_us,
    median_rate,
    prepare_deployment,
    round_ratios,
    run_benchmark,
    sequential,
    shape_check,
    start_py_spy,
    target_cells,
)

PEERS = ROOT / "bench" / "peers"
# The applications served: (ASGI path, directory; None: HomeHub's tree).
APPS = {
    "homehub": ("homehub.asgi:application", None),
    "sdk": ("sdk_home_http:app", PEERS),
    "durable": ("sdk_durable_http:app", PEERS),
    "floor": ("bare_asgi:app", PEERS),
}
# (tool, kind, the peer it is compared with)
SCENARIOS = [("get_all_states", "read", "sdk"), ("set_light_state", "write", "durable")]
MODES = {"seq": 1, "16 sessions": 16}
# Targets per (kind, HomeHub transport); every one is against the peer's HTTP figure.
TARGETS = {("read", "http"): 1.5, ("read", "ws"): 2.0, ("write", "http"): 1.5, ("write", "ws"): 1.5}
LABELS = {"http": "HTTP /mcp", "ws": "WebSocket"}
PEER_LABELS = {"sdk": "SDK (memory)", "durable": "SDK (durable)"}


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


async def open_sessions(kind: str, name: str, ports: list[int], token: str, count: int) -> list:
    """`count` sessions spread over the servers at `ports` in turn."""
    cls = WsSession if kind == "ws" else HttpSession
    sessions = [cls(name, ports[i % len(ports)], token) for i in range(count)]
    for session in sessions:
        await session.open()
    return sessions


async def close_all(sessions: list) -> None:
    """Close the sessions and empty the list."""
    for session in sessions:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(session.close(), 5)
    sessions.clear()


class Side:
    """One application as served in the deployment: one server per process."""

    def __init__(self, name: str, servers: list[Server]) -> None:
        self.name, self.servers = name, servers

    @property
    def ports(self) -> list[int]:
        return [server.port for server in self.servers]

    def cpu(self) -> float:
        return sum(server.cpu() for server in self.servers)


async def measure(side: Side, sessions: list, tool: str, n: int) -> tuple[Run, float]:
    """`n` calls spread over the sessions, each sequential; returns the run and client CPU."""
    args = arguments_for(tool)
    latencies: list[float] = []
    share, extra = divmod(n, len(sessions))
    cpu0, client0, wall0 = side.cpu(), time.process_time(), time.perf_counter()
    failures = await asyncio.gather(
        *(
            sequential(session.timed_call, tool, args, share + (i < extra), latencies)
            for i, session in enumerate(sessions)
        )
    )
    wall = time.perf_counter() - wall0
    run = Run(n, wall, side.cpu() - cpu0, latencies, sum(failures))
    return run, time.process_time() - client0


# --- report ------------------------------------------------------------------------------

Key = tuple[str, str, str, str, str]  # (deployment, side, transport, scenario, mode)


def _cells(runs: list[Run]) -> list[str]:
    return [fmt_rate(median_rate(runs)), fmt_latency(runs), f"{median_cpu_per_call_us(runs):,.0f}"]


def table(results: dict[Key, list[Run]], deployments: list[str], scenarios: list[str]) -> tuple[str, bool]:
    """Markdown table, one row per HomeHub transport (the peer's and floor's figures repeated),
    medians over the rounds; (text, every target met by its median ratio)."""
    head = ["deployment", "scenario", "mode", "HomeHub via", "HomeHub calls/s", "p50/p99 ms", "CPU µs/call"]
    head += ["peer", "peer calls/s", "p50/p99 ms", "CPU µs/call"]
    head += ["floor calls/s", "p50/p99 ms", "CPU µs/call"]
    head += ["HomeHub/peer", "target", "", "floor/peer"]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    all_met = True
    for deployment in deployments:
        for scenario, kind, peer_name in [sc for sc in SCENARIOS if sc[0] in scenarios]:
            for mode in MODES:
                peer = results.get((deployment, peer_name, "http", scenario, mode))
                floor = results.get((deployment, "floor", "http", scenario, mode))
                for transport in LABELS:
                    ours = results.get((deployment, "homehub", transport, scenario, mode))
                    if ours is None and peer is None:
                        continue
                    row = [deployment, scenario, mode, LABELS[transport]]
                    row += _cells(ours) if ours else ["", "", ""]
                    row += [PEER_LABELS[peer_name], *(_cells(peer) if peer else ["", "", ""])]
                    row += _cells(floor) if floor else ["", "", ""]
                    cells, met = target_cells(ours, peer, TARGETS[(kind, transport)])
                    all_met &= met
                    row += cells
                    row.append(fmt_ratios(round_ratios(floor, peer)) if floor and peer else "")
                    lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines), all_met


def summary(results: dict[Key, list[Run]]) -> list[dict[str, Any]]:
    """The figures as JSON (`--json`): every cell's medians and per-round ratios."""
    cells = []
    for (deployment, side, transport, scenario, mode), runs in sorted(results.items()):
        peer_name = next(peer for tool, _kind, peer in SCENARIOS if tool == scenario)
        peer = results.get((deployment, peer_name, "http", scenario, mode))
        where = {"deployment": deployment, "side": side, "transport": transport, "scenario": scenario}
        cells.append({**where, "mode": mode, **figures(runs, peer if side != peer_name else None)})
    return cells


# --- main --------------------------------------------------------------------------------


async def measure_turn(
    side: Side, transport: str, token: str, width: int, cell: tuple[str, str], opts
) -> Run:
    """One side's turn in a cell: fresh sessions (only this turn's are open while it runs:
    an open WebSocket session hears every write's broadcast, which costs HomeHub), the
    warm-up, `--count` measured calls."""
    scenario, mode = cell
    sessions = await open_sessions(transport, side.name, side.ports, token, width)
    try:
        if opts.warmup:
            await measure(side, sessions, scenario, opts.warmup)
        run, client_cpu = await measure(side, sessions, scenario, opts.count)
    finally:
        await close_all(sessions)
    if run.failures:
        raise ProtocolFailure(f"{side.name}: {run.failures} failed calls in {scenario}/{mode}")
    print(
        f"  {side.name:8} {transport:4} {scenario:15} {mode:11} "
        f"{fmt_rate(run.rate):>6} calls/s p50 {fmt_ms(run.percentile(0.5))} ms "
        f"p99 {fmt_ms(run.percentile(0.99))} ms server CPU {run.cpu_per_call_us:,.0f} "
        f"µs/call (client {client_cpu / run.calls * 1e6:,.0f})",
        file=sys.stderr,
    )
    return run


def start_side(name: str, deployment: Deployment, opts, workdir: Path) -> Side:
    app, app_dir = APPS[name]
    env = deployment.homehub_env if name == "homehub" else deployment.peer_env
    if name == "homehub" and opts.homehub_json:
        env = {**env, "MCP_HTTP_JSON_RESPONSE": "1"}
    folder = opts.root if app_dir is None else app_dir
    servers = [
        Server(f"{name}-{i}", opts.server, app, folder, env, workdir / f"{name}-{i}.log")
        for i in range(deployment.processes)
    ]
    return Side(name, servers)


async def run_deployment(kind: str, opts: argparse.Namespace, results: dict[Key, list[Run]]) -> None:
    workdir = Path(tempfile.mkdtemp(prefix=f"bench_http_{kind}_", dir="/tmp"))
    deployment = prepare_deployment(
        kind, workdir, root=opts.root, pg_server_url=opts.pg_server_url, redis_url=opts.redis_url
    )
    sides: dict[str, Side] = {}
    profiler: subprocess.Popen | None = None
    sessions: list = []
    try:
        token = create_token(deployment.homehub_env, "bench_http", root=opts.root)
        names = list(APPS) if opts.only is None else [opts.only]
        for name in names:
            sides[name] = start_side(name, deployment, opts, workdir)
        for side in sides.values():
            for server in side.servers:
                await server.start()
        print(f"{kind}: {deployment.label}; logs in {workdir}", file=sys.stderr)
        # The homes must answer alike; the floor is no home (one answer for every tool).
        homes = [name for name in sides if name != "floor"]
        shape = [(await open_sessions("http", n, sides[n].ports, token, 1))[0] for n in homes]
        if "homehub" in sides:
            shape += await open_sessions("ws", "homehub-ws", sides["homehub"].ports, token, 1)
        sessions += shape
        for session in shape:  # a write cell may leave `salon` on (odd counts per session)
            await session.call("set_light_state", {"name": "salon", "on": False})
        problems = await shape_check(shape)
        if problems:
            raise ProtocolFailure("shape check failed:\n  " + "\n  ".join(problems))
        if shape:
            print(
                f"{kind}: the six tools answer alike on {', '.join(s.name for s in shape)}", file=sys.stderr
            )
        await asyncio.sleep(SETTLE_SECONDS)
        await close_all(sessions)
        if opts.py_spy and "homehub" in sides:
            profiler = start_py_spy(f"{opts.py_spy}.{kind}", sides["homehub"].servers[0].proc.pid)

        for mode, width in MODES.items():
            for scenario, _kind, peer in [sc for sc in SCENARIOS if sc[0] in opts.scenarios]:
                turns = [(n, "http") for n in ("homehub", peer, "floor") if n in sides]
                if "homehub" in sides and not opts.no_ws:
                    turns.insert(1, ("homehub", "ws"))
                # Rounds interleaved (A B C A B C ...), so drift hits every side alike.
                for _ in range(opts.rounds):
                    for name, transport in turns:
                        run = await measure_turn(sides[name], transport, token, width, (scenario, mode), opts)
                        results.setdefault((kind, name, transport, scenario, mode), []).append(run)
    finally:
        await close_all(sessions)
        if profiler is not None:
            profiler.send_signal(signal.SIGINT)
            profiler.wait(60)
            print(f"py-spy samples of HomeHub (raw, folded): {opts.py_spy}.{kind}", file=sys.stderr)
        for side in sides.values():
            for server in side.servers:
                server.stop()
        deployment.close()
        if not opts.keep:
            import shutil

            shutil.rmtree(workdir, ignore_errors=True)


async def main(opts: argparse.Namespace) -> int:
    deployments = opts.deployments.split(",")
    started = time.perf_counter()
    results: dict[Key, list[Run]] = {}
    for kind in deployments:
        await run_deployment(kind, opts, results)
    text, all_met = table(results, deployments, opts.scenarios)
    print(
        f"\nMCP tools/call over Streamable HTTP and WebSocket under {opts.server}: per cell "
        f"{opts.rounds} interleaved rounds of {opts.count} calls per side (after {opts.warmup} "
        f"warm-up calls each); medians over the rounds, ratios as median (min-max) of the "
        f"per-round ratios. HomeHub {'JSON' if opts.homehub_json else 'SSE'} answers"
        f"{'' if opts.root == ROOT else f' (tree {opts.root})'}. Machine: {machine()}. "
        f"Run took {time.perf_counter() - started:.0f} s.\n"
    )
    print(text, flush=True)
    if opts.json:
        Path(opts.json).write_text(json.dumps(summary(results), indent=1))
    if opts.only is None:
        print(
            "\nTargets (issue 16), on the median ratio: reads over /mcp >= 1.5x the SDK, over the "
            "WebSocket >= 2x the SDK's HTTP figure; writes >= 1.5x the durable peer over both: "
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
    parser.add_argument("--server", choices=ASGI_SERVERS, default="daphne", help="the ASGI server (daphne)")
    parser.add_argument("--only", choices=list(APPS), help="benchmark one side only")
    parser.add_argument("--no-ws", action="store_true", help="skip HomeHub's WebSocket")
    parser.add_argument(
        "--homehub-json", action="store_true", help="HomeHub answers in JSON (MCP_HTTP_JSON_RESPONSE=1)"
    )
    parser.add_argument(
        "--py-spy", metavar="FILE", help="record py-spy samples of HomeHub into FILE.<deployment>"
    )
    add_deployment_options(parser)
    opts = parser.parse_args(argv)
    if opts.count < 16 or opts.warmup < 0 or opts.rounds < 1:
        parser.error("--count must be at least 16, --rounds at least 1, --warmup not negative")
    check_deployment_options(parser, opts, [sc[0] for sc in SCENARIOS])
    return opts


if __name__ == "__main__":
    run_benchmark(main, parse_args())
