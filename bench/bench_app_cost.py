"""What an MCP `tools/call` costs the application itself, without any HTTP server.

`bench_http.py` measures calls through daphne and uvicorn, where the server's own share
(parsing HTTP, writing the answer, waking the loop) is most of a call and the same for
every application (its floor peer shows how much). This one takes the server away: each
application's ASGI callable is called directly, in a process of its own, with a ready
request scope, one body message and a `send` that keeps what it is given, so the CPU per
call is the application's alone: HomeHub's `/mcp` (`homehub.asgi:application`: routing,
Host and Origin checks, token, session, engine, tool, audit, SSE answer) against the
official SDK's `MCPServer` app (`bench/peers/sdk_home_http.py`, tools in memory, JSON
answers), both after an `initialize` and `notifications/initialized` of their own.

HomeHub runs on a fresh SQLite database (migrated, seeded, one token), DJANGO_DEBUG=0,
MCP_RATE_LIMIT=0; every call audited and every write committed, as served. The sides are
measured alternately, `--rounds` times (default 3), each round in fresh processes; the
figures are the medians of the rounds.

    .venv/bin/python bench/bench_app_cost.py              # ~1 minute
    .venv/bin/python bench/bench_app_cost.py --count 5000 --rounds 5
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from harness import ROOT, arguments_for, create_token, jsonrpc_request, machine, prepare_homehub

SCENARIOS = ["get_all_states", "set_light_state"]
SIDES = ["homehub", "sdk"]
WARMUP = 300


def _scope(token: str, session_id: bytes | None) -> dict[str, Any]:
    headers = [
        (b"host", b"127.0.0.1:8000"),
        (b"accept", b"application/json, text/event-stream"),
        (b"content-type", b"application/json"),
        (b"authorization", f"Bearer {token}".encode()),
        (b"mcp-protocol-version", b"2025-11-25"),
    ]
    if session_id is not None:
        headers.append((b"mcp-session-id", session_id))
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/mcp",
        "raw_path": b"/mcp",
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
    }


async def _post(app, scope: dict[str, Any], body: bytes) -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []
    delivered = False

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.Event().wait()  # the client never goes away during a call
        raise AssertionError("unreachable")

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    return sent


async def _child(side: str, tool: str, count: int, token: str) -> dict[str, float]:
    """In the child process: `count` calls of `tool` after the handshake and a warm-up."""
    if side == "sdk":
        sys.path.insert(0, str(ROOT / "bench" / "peers"))
        from sdk_home_http import app
    else:
        from homehub.asgi import application as app
    init = jsonrpc_request(
        0,
        "initialize",
        {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "b", "version": "1"}},
    )
    sent = await _post(app, _scope(token, None), init)
    session_id = dict(sent[0]["headers"]).get(b"mcp-session-id")
    scope = _scope(token, session_id)
    await _post(app, scope, jsonrpc_request(None, "notifications/initialized"))
    args = arguments_for(tool)
    bodies = [
        jsonrpc_request(i + 1, "tools/call", {"name": tool, "arguments": args(i)})
        for i in range(WARMUP + count)
    ]
    for body in bodies[:WARMUP]:
        sent = await _post(app, scope, body)
    answer = b"".join(m.get("body", b"") for m in sent)
    if b'"isError":false' not in answer:
        raise SystemExit(f"{side}: {tool} failed: {answer[:300]!r}")
    cpu, wall = time.process_time(), time.perf_counter()
    for body in bodies[WARMUP:]:
        await _post(app, scope, body)
    return {
        "cpu_us": (time.process_time() - cpu) / count * 1e6,
        "wall_us": (time.perf_counter() - wall) / count * 1e6,
    }


def _measure(side: str, tool: str, count: int, env: dict[str, str], token: str) -> dict[str, float]:
    argv = [
        sys.executable,
        __file__,
        "--child",
        side,
        "--tool",
        tool,
        "--count",
        str(count),
        "--token",
        token,
    ]
    out = subprocess.run(argv, cwd=ROOT, env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(opts: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="bench_app_cost_") as workdir:
        env = prepare_homehub(Path(workdir), sys.executable, debug=False)
        env.update(MCP_RATE_LIMIT="0", DJANGO_SETTINGS_MODULE="homehub.settings")
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "bench")])
        token = create_token(env, "bench_app_cost")
        figures: dict[tuple[str, str], list[dict[str, float]]] = {}
        for n in range(opts.rounds):
            for tool in SCENARIOS:
                for side in SIDES:
                    result = _measure(side, tool, opts.count, env, token)
                    figures.setdefault((side, tool), []).append(result)
                    print(
                        f"  round {n + 1} {side:8} {tool:16} {result['cpu_us']:7.1f} µs CPU/call",
                        file=sys.stderr,
                    )
    print(
        f"\nMCP tools/call in process, no HTTP server: {opts.count} calls per side and round after "
        f"{WARMUP} warm-up calls, median of {opts.rounds} rounds. Machine: {machine()}.\n"
    )
    print("| scenario | HomeHub /mcp app µs CPU/call | SDK app µs CPU/call | SDK / HomeHub |")
    print("|---|---|---|---|")
    for tool in SCENARIOS:
        ours = statistics.median(r["cpu_us"] for r in figures[("homehub", tool)])
        theirs = statistics.median(r["cpu_us"] for r in figures[("sdk", tool)])
        print(f"| {tool} | {ours:.0f} | {theirs:.0f} | {theirs / ours:.2f}x |")
    return 0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--count", type=int, default=3000, help="measured calls per side and round")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds (default 3)")
    parser.add_argument("--child", choices=SIDES, help=argparse.SUPPRESS)
    parser.add_argument("--tool", choices=SCENARIOS, help=argparse.SUPPRESS)
    parser.add_argument("--token", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


if __name__ == "__main__":
    opts = parse_args()
    if opts.child:
        print(json.dumps(asyncio.run(_child(opts.child, opts.tool, opts.count, opts.token))))
    else:
        sys.exit(main(opts))
