"""The ESP32 gateway under load: many simulated devices on one daphne, LLM calls through it.

One daphne process serves the hub on a fresh temporary SQLite database (`DJANGO_DEBUG=0`,
the in-memory channel layer, no rate limit). This process registers the agents, connects
simulated devices (`devices.xiaozhi.simulator`, xiaozhi-style firmware) to `/ws/devices/` and
drives LLM agents over `/ws/mcp/`, calling `<agent>__self_audio_speaker_set_volume` on
random devices, so every call crosses the whole path: MCP session, gateway, channel layer,
device consumer, device and back, with both audit events written.

1. Connect `--devices` devices; memory per connection is the growth of daphne's RSS
   divided by the number of devices (discovery done, tools in the database).
2. Round trips at 1, 10 and 100 concurrent calls (closed loop, `--duration` s each):
   calls/s, p50, p99; then an open loop at `--rate` calls/s (the target: p99 < 50 ms at
   100 calls/s with 1,000 devices).
3. The ceiling: add `--step` devices at a time up to `--max-devices`, stopping at the
   first step where some device cannot connect or finish discovery in time.

    .venv/bin/python bench/bench_devices.py                       # about 2 minutes
    .venv/bin/python bench/bench_devices.py --max-devices 1000    # no ramp
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


def agent_id(i: int) -> str:
    return f"bench:{i:05d}"


def tool_name(i: int) -> str:
    return f"bench_{i:05d}__self_audio_speaker_set_volume"


class Llm:
    """A minimal MCP client over /ws/mcp/ with many calls in flight."""

    def __init__(self, url: str, token: str) -> None:
        self.url, self.token = url, token
        self.pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.ids = 0

    async def open(self) -> None:
        from websockets.asyncio.client import connect

        self.ws = await connect(self.url, additional_headers={"Authorization": f"Bearer {self.token}"})
        self.reader = asyncio.ensure_future(self._read())
        await self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}})

    async def _read(self) -> None:
        async for frame in self.ws:
            message = json.loads(frame)
            future = self.pending.pop(message.get("id"), None)
            if future is not None:
                future.set_result(message)

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.ids += 1
        future = self.pending[self.ids] = asyncio.get_running_loop().create_future()
        await self.ws.send(json.dumps({"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params}))
        return await asyncio.wait_for(future, 30)

    async def call(self, name: str, arguments: dict[str, Any]) -> float:
        started = time.perf_counter()
        answer = await self.request("tools/call", {"name": name, "arguments": arguments})
        if "result" not in answer or answer["result"].get("isError"):
            raise RuntimeError(f"call failed: {answer}")
        return time.perf_counter() - started

    async def count_tools(self) -> int:
        count, cursor = 0, None
        while True:
            result = (await self.request("tools/list", {"cursor": cursor} if cursor else {}))["result"]
            count += len(result["tools"])
            cursor = result.get("nextCursor")
            if not cursor:
                return count

    async def close(self) -> None:
        await self.ws.close()
        self.reader.cancel()


class Fleet:
    """Simulated xiaozhi-style devices (`devices.xiaozhi.simulator`) connected to one hub's
    `/ws/devices/`, `concurrency` handshakes at a time; device `i` is `agent_id(i)` with
    `tokens[i]`."""

    def __init__(self, ws_base: str, tokens: list[str], concurrency: int) -> None:
        self.url, self.tokens = ws_base + "/ws/devices/", tokens
        self.gate = asyncio.Semaphore(concurrency)
        self.devices: list[Any] = []
        self.connect_times: list[float] = []

    async def connect(self, i: int) -> bool:
        from devices.xiaozhi.simulator import SimulatedDevice

        device = SimulatedDevice(self.url, agent_id(i), self.tokens[i])
        async with self.gate:
            started = time.perf_counter()
            try:
                await device.connect()
            except Exception as exc:
                print(f"  device {i} failed: {type(exc).__name__}: {exc}", file=sys.stderr)
                return False
            self.connect_times.append(time.perf_counter() - started)
        self.devices.append(device)
        return True

    async def grow(self, target: int) -> bool:
        """Connect devices up to `target` in all; whether every one of them connected."""
        return all(await asyncio.gather(*(self.connect(i) for i in range(len(self.devices), target))))

    async def close(self) -> None:
        await asyncio.gather(*(d.close() for d in self.devices), return_exceptions=True)


def summary(latencies: list[float], elapsed: float) -> dict[str, float]:
    return {
        "calls": len(latencies),
        "calls_per_s": round(len(latencies) / elapsed, 1),
        "p50_ms": round(percentile(latencies, 50) * 1000, 2),
        "p99_ms": round(percentile(latencies, 99) * 1000, 2),
    }


async def closed_loop(llms: list[Llm], devices: int, concurrency: int, duration: float) -> dict[str, float]:
    latencies: list[float] = []
    deadline = time.perf_counter() + duration

    async def worker(k: int) -> None:
        llm = llms[k % len(llms)]
        while time.perf_counter() < deadline:
            i = random.randrange(devices)
            latencies.append(await llm.call(tool_name(i), {"volume": random.randint(0, 100)}))

    started = time.perf_counter()
    await asyncio.gather(*(worker(k) for k in range(concurrency)))
    return summary(latencies, time.perf_counter() - started)


async def open_loop(llms: list[Llm], devices: int, rate: float, duration: float) -> dict[str, float]:
    latencies: list[float] = []
    calls = []

    async def one(k: int) -> None:
        latencies.append(await llms[k % len(llms)].call(tool_name(random.randrange(devices)), {"volume": 5}))

    started = time.perf_counter()
    for k in range(int(rate * duration)):
        await asyncio.sleep(max(0.0, started + k / rate - time.perf_counter()))
        calls.append(asyncio.ensure_future(one(k)))
    await asyncio.gather(*calls)
    return summary(latencies, time.perf_counter() - started)


async def run(
    args: argparse.Namespace, base: str, pid: int, tokens: list[str], llm_token: str
) -> dict[str, Any]:
    from asgiref.sync import sync_to_async

    from devices.agents.models import Agent

    ws_base = base.replace("http://", "ws://")
    fleet = Fleet(ws_base, tokens, args.connect_concurrency)

    @sync_to_async
    def discovered() -> int:
        return Agent.objects.filter(online=True, tools__available=True).distinct().count()

    watcher = Llm(ws_base + "/ws/mcp/", llm_token)
    await watcher.open()

    async def grow(target: int) -> dict[str, Any]:
        before = time.perf_counter()
        ok = await fleet.grow(target)
        deadline = time.perf_counter() + args.discovery_timeout
        # Discovery done (tools in the database), and the gateway offers every tool.
        while ok and (await discovered() < target or await watcher.count_tools() < 2 + 5 * target):
            if time.perf_counter() > deadline:
                ok = False
            await asyncio.sleep(0.2)
        return {
            "devices": len(fleet.devices),
            "all_ready": ok,
            "seconds": round(time.perf_counter() - before, 1),
            "rss_mib": round(rss_mib(pid), 1),
        }

    report: dict[str, Any] = {"rss_idle_mib": round(rss_mib(pid), 1)}
    first = await grow(args.devices)
    report["connect"] = {
        **first,
        "kib_per_device": round((first["rss_mib"] - report["rss_idle_mib"]) * 1024 / args.devices, 1),
        "hello_p50_ms": round(percentile(fleet.connect_times, 50) * 1000, 1),
        "hello_p99_ms": round(percentile(fleet.connect_times, 99) * 1000, 1),
    }
    print("connected:", report["connect"], flush=True)
    llms = [Llm(ws_base + "/ws/mcp/", llm_token) for _ in range(10)]
    for llm in llms:
        await llm.open()
    await closed_loop(llms, args.devices, 10, 1.0)  # warm-up
    report["closed_loop"] = {}
    for concurrency in (1, 10, 100):
        result = await closed_loop(llms, args.devices, concurrency, args.duration)
        report["closed_loop"][concurrency] = result
        print(f"concurrency {concurrency}:", result, flush=True)
    report["open_loop"] = await open_loop(llms, args.devices, args.rate, args.duration)
    print(f"open loop at {args.rate:g}/s:", report["open_loop"], flush=True)

    report["ramp"] = []
    target = args.devices
    while target < args.max_devices:
        target = min(target + args.step, args.max_devices)
        step = await grow(target)
        if step["all_ready"]:
            step["probe_10"] = await closed_loop(llms, target, 10, 2.0)
        print("ramp:", step, flush=True)
        report["ramp"].append(step)
        if not step["all_ready"]:
            break
    for llm in [*llms, watcher]:
        await llm.close()
    await fleet.close()
    return report


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--devices", type=int, default=1000)
    parser.add_argument("--max-devices", type=int, default=4000)
    parser.add_argument("--step", type=int, default=1000)
    parser.add_argument("--duration", type=float, default=5.0, help="seconds per latency measurement")
    parser.add_argument("--rate", type=float, default=100.0, help="calls/s of the open loop")
    parser.add_argument("--connect-concurrency", type=int, default=100)
    parser.add_argument("--discovery-timeout", type=float, default=60.0)
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="homehub-bench-devices-"))
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "homehub.settings",
        "HOMEHUB_SQLITE_NAME": str(workdir / "bench.sqlite3"),
        "DJANGO_DEBUG": "0",
        "DJANGO_SECRET_KEY": os.environ.get("DJANGO_SECRET_KEY") or secrets.token_urlsafe(50),
        "MCP_RATE_LIMIT": "0",
        "HOMEHUB_LOG_LEVEL": "WARNING",
    }
    env.pop("REDIS_URL", None)
    env.pop("DATABASE_URL", None)
    os.environ.update(env)
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import transaction

    from devices.agents.services import register_agent
    from devices.home.services import seed_home
    from mcp_endpoint.auth.tokens import create_token

    call_command("migrate", verbosity=0)
    seed_home()
    with transaction.atomic():
        tokens = [
            register_agent(agent_id(i), transport="ws", actor="bench", interface="system")[1]
            for i in range(args.max_devices)
        ]
    llm_token = create_token("bench", ["devices"], actor="bench", interface="system")[1]

    import httpx

    from tests.conftest import free_port

    port = free_port()
    daphne = subprocess.Popen(
        [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "homehub.asgi:application"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=open(workdir / "daphne.log", "w"),  # noqa: SIM115
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                httpx.get(base + "/.well-known/oauth-protected-resource", timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        started = time.perf_counter()
        report = asyncio.run(run(args, base, daphne.pid, tokens, llm_token))
        report["wall_seconds"] = round(time.perf_counter() - started, 1)
        report["cpus"] = os.cpu_count()
        print(json.dumps(report, indent=2))
        ok = report["open_loop"]["p99_ms"] < 50 and report["connect"]["all_ready"]
        print("target (1,000 devices, p99 < 50 ms at 100 calls/s):", "met" if ok else "NOT met")
        return 0 if ok else 1
    finally:
        daphne.terminate()
        daphne.wait(10)
        shutil.rmtree(workdir, ignore_errors=True) if not os.environ.get("BENCH_KEEP") else print(workdir)


if __name__ == "__main__":
    sys.exit(main())
