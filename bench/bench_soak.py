"""Soak and faults: minutes of mixed traffic against a realistic deployment on this machine,
while the broker is restarted and a daphne process is killed (issue 6).

Everything stays on loopback and stops by itself. The deployment: two daphne processes
(`a`, `b`) over a fresh PostgreSQL database (created, then dropped, on `--database-url`)
and the Redis channel layer (`--redis-url`, flushed before and after), one
`manage.py mqtt_worker`, and a private Mosquitto with persistence on a free port.
Traffic, at fixed moderate rates, from this process (asyncio, plus paho's thread):

- mcp-http: Streamable HTTP session opened on `a` (SSE answers), `get_all_states`,
  `set_light_state` and `get_alarm_status` in turn;
- mcp-ws: the same over `/ws/mcp/`, connected to `a`;
- device: a simulated ESP32 (`devices.xiaozhi.simulator`) on `a`'s `/ws/devices/`, called through
  the gateway by an LLM-side client on `b` (`<agent>__self_lamp_set_power`, and
  `call_agent_tool` with `self.get_device_status`);
- dashboard: a logged-in user's page GETs on both processes in turn, and a `/ws/home/`
  listener on `a`;
- telemetry: unique QoS 1 readings on `office/soak/sensor/env_01/temperature` by a paho
  client with a persistent session (`clean_session=False`), which keeps what is not
  acknowledged and sends it again after a reconnect.

Faults at fixed times: at 30 % of the run the broker is stopped cleanly (or SIGKILLed,
with `--crash-broker`) and started again 5 s later on the same port with its persistence;
at 60 % daphne `a` is SIGKILLed and started again 5 s later. Clients behave like real
ones: on a refused or broken connection they retry (a call three times at most, 1 s
apart) on the other process, HTTP with the same MCP session (sessions live in the
database), WebSockets by reconnecting and initializing again, the device by saying hello
to the other process.

At the end the publisher's unacknowledged messages get `--drain` seconds, then the
database is compared with what the broker acknowledged: lost (acknowledged, never stored;
must be 0), duplicates (must be 0). Report: calls made, answered and failed attempts by kind
per traffic type, p50/p99, readings, and the RSS of every hub process over time. A line of
progress every 30 s. Exit status 1 if readings were lost or duplicated. `--speed` multiplies
every rate (a leak shows sooner). docs/RELIABILITY.md says what the results mean.

    .venv/bin/python bench/bench_soak.py                 # 10 minutes (+ ~1 min set-up and drain)
    .venv/bin/python bench/bench_soak.py --minutes 1     # smoke run
    .venv/bin/python bench/bench_soak.py --minutes 3 --speed 5   # five times the traffic
    .venv/bin/python bench/bench_soak.py --minutes 2 --crash-broker   # SIGKILL, not a clean stop
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter, deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from harness import PROTOCOL_VERSION, ROOT, Mosquitto, create_database, free_port, machine, rss_mib
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

sys.path.insert(0, str(ROOT))

from devices.xiaozhi.simulator import SimulatedDevice

AGENT = "soak_esp32"
SENSOR = ("soak", "sensor", "env_01", "temperature")
ATTEMPTS = 3
CALL_TIMEOUT = 10.0
PROGRESS_SECONDS = 30.0
# Calls per second of each traffic type, and readings per second.
RATES = {"mcp-http": 5.0, "mcp-ws": 5.0, "device": 2.0, "dashboard": 2.0, "telemetry": 20.0}
HOME_CALLS = [
    ("get_all_states", lambda i: {}),
    ("set_light_state", lambda i: {"name": "salon", "on": bool(i & 2)}),
    ("get_alarm_status", lambda i: {}),
]
PAGES = ["/", "/sensors/", "/devices/", "/activity/"]
CONNECTION_ERRORS = (OSError, ConnectionClosed, InvalidStatus, httpx.TransportError, TimeoutError)


class CallFailed(Exception):
    """An answer that is not a success (the kind is the message)."""


def kind_of(exc: BaseException) -> str:
    """A short, stable label for the report."""
    if isinstance(exc, CallFailed):
        return str(exc)
    if isinstance(exc, InvalidStatus):
        return f"handshake {exc.response.status_code}"
    return type(exc).__name__


@dataclass
class Stats:
    """One traffic type: calls made, answered, failed attempts by kind, latencies."""

    calls: int = 0
    answered: int = 0
    failed: int = 0  # calls that got no answer after every attempt
    errors: Counter[str] = field(default_factory=Counter)
    latencies: list[float] = field(default_factory=list)
    extra: Counter[str] = field(default_factory=Counter)

    def percentile(self, q: float) -> float:
        if not self.latencies:
            return float("nan")
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# --- the deployment ------------------------------------------------------------------------


class HubProcess:
    """One hub process (`python -m daphne` or `manage.py ...`), restartable with the same
    arguments; its output appended to a log file."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str], log: Path) -> None:
        self.name, self.argv, self.env, self.log = name, argv, env, log
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def start(self) -> None:
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(self.argv, cwd=ROOT, env=self.env, stdout=log, stderr=log)
        self.starts += 1

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        if self.alive():
            assert self.proc is not None
            self.proc.kill()
            self.proc.wait()

    def stop(self) -> None:
        if self.alive():
            assert self.proc is not None
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.kill()


def wait_http(url: str, proc: HubProcess, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(httpx.HTTPError):
            httpx.get(url, timeout=2)
            return
        if not proc.alive() or time.monotonic() > deadline:
            raise RuntimeError(f"{proc.name} did not answer: see {proc.log}")
        time.sleep(0.2)


def manage(env: dict[str, str], *argv: str) -> str:
    """Run a management command; its last line of output."""
    done = subprocess.run(
        [sys.executable, "manage.py", *argv], cwd=ROOT, env=env, check=True, capture_output=True, text=True
    )
    return done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""


@dataclass
class Deployment:
    workdir: Path
    env: dict[str, str]
    broker: Mosquitto
    daphnes: list[HubProcess]
    worker: HubProcess
    ports: list[int]
    llm_token: str = ""
    device_token: str = ""
    password: str = ""

    @property
    def bases(self) -> list[str]:
        return [f"http://127.0.0.1:{port}" for port in self.ports]

    def processes(self) -> list[HubProcess]:
        return [*self.daphnes, self.worker]


def deploy(args: argparse.Namespace, workdir: Path, database_url: str) -> Deployment:
    broker = Mosquitto(workdir / "broker").start()
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "REDIS_URL": args.redis_url,
        "MQTT_URL": broker.url,
        "DJANGO_DEBUG": "0",
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
        # Plain HTTP on loopback: in production daphne sits behind nginx's TLS.
        "DJANGO_SECURE_SSL_REDIRECT": "0",
        "DJANGO_STATIC_ROOT": str(workdir / "static"),
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
        "MCP_RATE_LIMIT": "0",
        "HOMEHUB_LOG_LEVEL": "WARNING",
        "HOMEHUB_ADMIN_PASSWORD": "soak-" + os.urandom(6).hex(),
        "PYTHONUNBUFFERED": "1",
    }
    manage(env, "migrate", "--noinput", "-v", "0")
    manage(env, "collectstatic", "--noinput", "-v", "0")
    manage(env, "seed_home")
    manage(env, "ensure_admin")
    llm_token = manage(env, "create_mcp_token", "soak", "--scopes", "read,control,devices")
    device_token = manage(env, "register_agent", AGENT, "--transport", "ws")
    ports = [free_port(), free_port()]
    daphnes = [
        HubProcess(
            f"daphne-{name}",
            [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "homehub.asgi:application"],
            env,
            workdir / f"daphne-{name}.log",
        )
        for name, port in zip("ab", ports, strict=True)
    ]
    worker = HubProcess(
        "worker",
        [sys.executable, "manage.py", "mqtt_worker", "--client-id", "soak-worker"],
        env,
        workdir / "worker.log",
    )
    password = env["HOMEHUB_ADMIN_PASSWORD"]
    hub = Deployment(workdir, env, broker, daphnes, worker, ports, llm_token, device_token, password)
    for process in hub.processes():
        process.start()
    for daphne, base in zip(daphnes, hub.bases, strict=True):
        wait_http(base + "/login/", daphne)
    return hub


# --- clients -------------------------------------------------------------------------------


class Failover:
    """Which hub process a client talks to: it moves to the other one when a connection fails."""

    def __init__(self, bases: list[str], first: int) -> None:
        self.bases, self.index = bases, first

    @property
    def http(self) -> str:
        return self.bases[self.index]

    @property
    def ws(self) -> str:
        return self.http.replace("http://", "ws://")

    def move(self) -> None:
        self.index = (self.index + 1) % len(self.bases)


async def attempt(stats: Stats, target: Failover, call: Callable[[], Awaitable[None]]) -> None:
    """One logical call: up to ATTEMPTS tries, moving to the other process after a broken
    connection; counts the call, its answer or failure, and the latency to the answer."""
    stats.calls += 1
    started = time.perf_counter()
    for n in range(ATTEMPTS):
        try:
            async with asyncio.timeout(CALL_TIMEOUT):
                await call()
        except CONNECTION_ERRORS as exc:
            stats.errors[kind_of(exc)] += 1
            target.move()
        except CallFailed as exc:
            stats.errors[kind_of(exc)] += 1
        else:
            stats.answered += 1
            stats.latencies.append(time.perf_counter() - started)
            return
        if n + 1 < ATTEMPTS:
            await asyncio.sleep(1.0)
    stats.failed += 1


def check_result(message: dict[str, Any]) -> dict[str, Any]:
    if "error" in message:
        raise CallFailed(f"json-rpc {message['error'].get('code')}")
    result = message.get("result")
    if not isinstance(result, dict):
        raise CallFailed("no result")
    if result.get("isError"):
        text = (result.get("content") or [{}])[0].get("text", "")
        raise CallFailed("tool error: " + re.sub(r"'[^']*'", "…", text)[:60])
    return result


class HttpMcp:
    """Streamable HTTP: one session, continued on the other process when one fails."""

    def __init__(self, target: Failover, token: str) -> None:
        self.target, self.ids, self.session = target, 0, ""
        self.client = httpx.AsyncClient(timeout=CALL_TIMEOUT, headers={"Authorization": f"Bearer {token}"})

    async def post(self, message: dict[str, Any]) -> httpx.Response:
        headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": PROTOCOL_VERSION}
        if self.session:
            headers["Mcp-Session-Id"] = self.session
        return await self.client.post(self.target.http + "/mcp", json=message, headers=headers)

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.ids += 1
        response = await self.post({"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params})
        if response.status_code == 404 and self.session:
            self.session = ""
            raise CallFailed("session lost (404)")
        if response.status_code != 200:
            raise CallFailed(f"http {response.status_code}")
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            data = [line[5:] for line in response.text.splitlines() if line.startswith("data:")]
            return json.loads(data[-1])
        return response.json()

    async def call(self, name: str, arguments: dict[str, Any]) -> None:
        if not self.session:
            await self.open()
        check_result(await self.request("tools/call", {"name": name, "arguments": arguments}))

    async def open(self) -> None:
        initialize = {"protocolVersion": PROTOCOL_VERSION}
        response = await self.post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": initialize})
        if response.status_code != 200:
            raise CallFailed(f"initialize http {response.status_code}")
        self.session = response.headers["mcp-session-id"]
        await self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    async def close(self) -> None:
        await self.client.aclose()


class WsMcp:
    """MCP over /ws/mcp/: one call in flight; reconnects (and initializes) when needed."""

    def __init__(self, target: Failover, token: str, stats: Stats) -> None:
        self.target, self.token, self.stats, self.ids = target, token, stats, 0
        self.ws: ClientConnection | None = None

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert self.ws is not None
        self.ids += 1
        await self.ws.send(json.dumps({"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params}))
        while True:
            message = json.loads(await self.ws.recv())
            if message.get("id") == self.ids:
                return message

    async def call(self, name: str, arguments: dict[str, Any]) -> None:
        if self.ws is None:
            try:
                self.ws = await connect(
                    self.target.ws + "/ws/mcp/",
                    additional_headers={"Authorization": f"Bearer {self.token}"},
                    subprotocols=["mcp"],  # type: ignore[list-item]
                    open_timeout=CALL_TIMEOUT,
                )
                await self.request("initialize", {"protocolVersion": PROTOCOL_VERSION, "capabilities": {}})
                await self.ws.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            except BaseException:
                await self.drop()
                raise
            self.stats.extra["connections"] += 1
        try:
            check_result(await self.request("tools/call", {"name": name, "arguments": arguments}))
        except CONNECTION_ERRORS:
            await self.drop()
            raise

    async def drop(self) -> None:
        if self.ws is not None:
            with contextlib.suppress(Exception):
                await self.ws.close()
            self.ws = None

    close = drop


async def paced(rate: float, stop: asyncio.Event, step: Callable[[int], Awaitable[None]]) -> None:
    """`step(i)` at a fixed rate, one at a time; a slow step delays the next (no burst after)."""
    interval, i = 1.0 / rate, 0
    next_at = time.perf_counter()
    while not stop.is_set():
        await step(i)
        i += 1
        next_at = max(next_at + interval, time.perf_counter() - interval)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), max(0.0, next_at - time.perf_counter()))


async def mcp_traffic(hub: Deployment, kind: str, stats: Stats, stop: asyncio.Event) -> None:
    """The home's tools at `kind`'s rate over Streamable HTTP (`mcp-http`) or `mcp-ws`."""
    target = Failover(hub.bases, 0)
    client = HttpMcp(target, hub.llm_token) if kind == "mcp-http" else WsMcp(target, hub.llm_token, stats)

    async def step(i: int) -> None:
        name, arguments = HOME_CALLS[i % len(HOME_CALLS)]
        await attempt(stats, target, lambda: client.call(name, arguments(i)))

    try:
        await paced(RATES[kind], stop, step)
    finally:
        await client.close()


async def device_traffic(hub: Deployment, stats: Stats, stop: asyncio.Event) -> None:
    """The device (on `a` first, hello again to the other process when its socket drops)
    and an LLM-side client on `b` calling it through the gateway."""
    device_target = Failover(hub.bases, 0)

    async def keep_device() -> None:
        while not stop.is_set():
            device = SimulatedDevice(device_target.ws + "/ws/devices/", AGENT, hub.device_token)
            try:
                await device.connect()
            except CONNECTION_ERRORS as exc:
                stats.extra[f"device hello failed: {kind_of(exc)}"] += 1
                device_target.move()
                await asyncio.sleep(1.0)
                continue
            stats.extra["device connections"] += 1
            closed = asyncio.ensure_future(device.closed.wait())
            await asyncio.wait([closed, asyncio.ensure_future(stop.wait())], return_when="FIRST_COMPLETED")
            if not closed.done():
                closed.cancel()
                await device.close()
                return
            device_target.move()

    caller_target = Failover(hub.bases, 1)
    caller = WsMcp(caller_target, hub.llm_token, stats)

    async def step(i: int) -> None:
        if i % 2:
            call = ("call_agent_tool", {"agent_id": AGENT, "tool": "self.get_device_status"})
        else:
            call = (direct, {"on": bool(i & 2)})
        await attempt(stats, caller_target, lambda: caller.call(*call))

    keeper = asyncio.ensure_future(keep_device())
    direct = await wait_for_agent(hub, stop)
    try:
        await paced(RATES["device"], stop, step)
    finally:
        await caller.drop()
        await keeper


async def wait_for_agent(hub: Deployment, stop: asyncio.Event) -> str:
    """Until the gateway offers the device's tools (discovery done), as an LLM sees them in
    `tools/list`; returns the lamp tool's name there."""
    probe = WsMcp(Failover(hub.bases, 1), hub.llm_token, Stats())
    deadline = time.monotonic() + 60
    try:
        while not stop.is_set() and time.monotonic() < deadline:
            with contextlib.suppress(CallFailed, *CONNECTION_ERRORS):
                await probe.call("list_agents", {})  # connects and initializes
                listed = await probe.request("tools/list", {})
                for tool in listed["result"]["tools"]:
                    if tool["name"].startswith(AGENT) and tool["name"].endswith("self_lamp_set_power"):
                        return tool["name"]
            await asyncio.sleep(0.5)
    finally:
        await probe.drop()
    raise RuntimeError("the device's tools never appeared in tools/list")


async def dashboard_traffic(hub: Deployment, stats: Stats, home: Stats, stop: asyncio.Event) -> None:
    """A logged-in user: pages from both processes in turn, and a /ws/home/ listener on `a`."""
    target = Failover(hub.bases, 0)
    client = httpx.AsyncClient(timeout=CALL_TIMEOUT)

    async def send_secure_cookies(request: httpx.Request) -> None:
        # Session and CSRF cookies are Secure without DEBUG, and httpx keeps them to HTTPS;
        # the bench stands where nginx's TLS ends, so it sends them over loopback HTTP.
        request.headers["Cookie"] = "; ".join(f"{c.name}={c.value}" for c in client.cookies.jar)

    client.event_hooks["request"] = [send_secure_cookies]
    login = await client.get(hub.bases[0] + "/login/")
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login.text)
    assert csrf, "no CSRF token on the login page"
    answer = await client.post(
        hub.bases[0] + "/login/",
        data={"username": "admin", "password": hub.password, "csrfmiddlewaretoken": csrf.group(1)},
        headers={"Referer": hub.bases[0] + "/login/"},
    )
    if answer.status_code != 302:
        raise RuntimeError(f"login failed: {answer.status_code}")

    async def get(path: str) -> None:
        response = await client.get(target.http + path)
        if response.status_code != 200:
            raise CallFailed(f"http {response.status_code}")

    async def step(i: int) -> None:
        target.move()  # both processes in turn
        await attempt(stats, target, lambda: get(PAGES[i // 2 % len(PAGES)]))

    listener = asyncio.ensure_future(listen_home(hub, client.cookies["sessionid"], home, stop))
    try:
        await paced(RATES["dashboard"], stop, step)
    finally:
        await listener
        await client.aclose()


async def listen_home(hub: Deployment, session: str, home: Stats, stop: asyncio.Event) -> None:
    """The dashboard's live socket: counts the events it receives and reconnects (to the
    other process) when it drops, as the page's script does."""
    target = Failover(hub.bases, 0)
    while not stop.is_set():
        try:
            async with connect(
                target.ws + "/ws/home/",
                additional_headers={"Cookie": f"sessionid={session}", "Origin": target.http},
                open_timeout=CALL_TIMEOUT,
            ) as ws:
                home.extra["connections"] += 1
                stopping = asyncio.ensure_future(stop.wait())
                while not stop.is_set():
                    frame = asyncio.ensure_future(ws.recv())
                    await asyncio.wait([frame, stopping], return_when="FIRST_COMPLETED")
                    if not frame.done():
                        frame.cancel()
                        break
                    frame.result()
                    home.extra["events"] += 1
        except CONNECTION_ERRORS as exc:
            home.errors[kind_of(exc)] += 1
            target.move()
            await asyncio.sleep(1.0)


class Publisher:
    """Unique QoS 1 readings through paho with a persistent session: what the broker has not
    acknowledged stays queued in paho and is sent again after a reconnect.

    paho runs `on_publish` holding its own lock, so the callback only appends the message id
    and its time to a deque (atomic), and the event loop's side matches them to readings: no
    lock of ours is ever taken inside paho's. Message ids wrap at 65,535, far more than are
    ever unacknowledged here."""

    def __init__(self, port: int, stats: Stats) -> None:
        import paho.mqtt.client as mqtt
        from paho.mqtt.enums import CallbackAPIVersion

        self.stats = stats
        self.pending: dict[int, tuple[int, float]] = {}  # message id -> (reading, sent at)
        self.pubacks: deque[tuple[int, float]] = deque()  # (message id, when), from paho's thread
        self.acked: set[int] = set()
        self.start_ms = int(time.time() * 1000) - 3_600_000
        c = mqtt.Client(
            CallbackAPIVersion.VERSION2,
            client_id="soak-publisher",
            clean_session=False,
            protocol=mqtt.MQTTv311,
        )
        c.max_inflight_messages_set(20)
        c.max_queued_messages_set(0)  # unbounded: nothing refused while the broker is away
        c.reconnect_delay_set(0.5, 2)
        c.on_publish = lambda client, userdata, mid, *a: self.pubacks.append((mid, time.perf_counter()))
        c.on_connect = self._on_connect
        c.connect("127.0.0.1", port, keepalive=10)
        c.loop_start()
        self.client = c

    def _on_connect(self, client: Any, userdata: Any, flags: Any, reason: Any, properties: Any) -> None:
        if not reason.is_failure:
            self.stats.extra["connections"] += 1
            self.stats.extra["with the session kept"] += int(flags.session_present)

    def publish(self, i: int) -> None:
        self.collect()
        payload = json.dumps({"value": i, "unit": "c", "timestamp": self.start_ms + 10 * i})
        info = self.client.publish("office/" + "/".join(SENSOR), payload, qos=1)
        self.pending[info.mid] = (i, time.perf_counter())
        self.stats.calls += 1
        if info.rc:
            self.stats.extra["queued while disconnected"] += 1

    def collect(self) -> None:
        """Move what the broker acknowledged from `pending` to `acked`."""
        while self.pubacks:
            mid, at = self.pubacks.popleft()
            if mid not in self.pending:  # published a moment ago: its entry is being written
                self.pubacks.appendleft((mid, at))
                return
            i, sent = self.pending.pop(mid)
            if i in self.acked:
                self.stats.extra["acknowledged twice"] += 1
            self.acked.add(i)
            self.stats.answered += 1
            self.stats.latencies.append(at - sent)

    def unacked(self) -> int:
        self.collect()
        return len(self.pending)

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


async def telemetry_traffic(publisher: Publisher, stop: asyncio.Event) -> None:
    async def step(i: int) -> None:
        publisher.publish(i)

    await paced(RATES["telemetry"], stop, step)


# --- faults, memory, progress ----------------------------------------------------------------


@dataclass
class Log:
    started: float = field(default_factory=time.monotonic)
    faults: list[str] = field(default_factory=list)
    memory: list[tuple[float, dict[str, float]]] = field(default_factory=list)

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def note(self, text: str) -> None:
        line = f"[{self.elapsed():6.1f} s] {text}"
        self.faults.append(line)
        print(line, flush=True)


async def faults(hub: Deployment, log: Log, seconds: float, crash_broker: bool, stop: asyncio.Event) -> None:
    async def at(fraction: float) -> bool:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), max(0.0, fraction * seconds - log.elapsed()))
        return not stop.is_set()

    if await at(0.3):
        log.note("broker: SIGKILL (crash)" if crash_broker else "broker: clean stop")
        await asyncio.to_thread(hub.broker.stop, crash_broker)
        await asyncio.sleep(5)
        await asyncio.to_thread(hub.broker.start)
        log.note("broker: started again (same port, its persistence)")
    if await at(0.6):
        a = hub.daphnes[0]
        log.note(f"daphne-a: SIGKILL (pid {a.pid})")
        a.kill()
        await asyncio.sleep(5)
        a.start()
        await asyncio.to_thread(wait_http, hub.bases[0] + "/login/", a)
        log.note(f"daphne-a: started again (pid {a.pid}), answering")


def memory(hub: Deployment) -> dict[str, float]:
    sample = {p.name: rss_mib(p.pid) if p.alive() else 0.0 for p in hub.processes()}
    proc = hub.broker.proc
    sample["mosquitto"] = rss_mib(proc.pid) if proc is not None and proc.poll() is None else 0.0
    return sample


async def sample_memory(hub: Deployment, log: Log, every: float, stop: asyncio.Event) -> None:
    while True:
        log.memory.append((log.elapsed(), memory(hub)))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), every)
        if stop.is_set():
            return


def _sensor_rows(database_url: str, what: str) -> list[tuple]:
    """`SELECT what` over the soak sensor's readings."""
    import psycopg

    with psycopg.connect(database_url) as conn:
        return conn.execute(
            f"SELECT {what} FROM devices_telemetryreading"
            " WHERE zone = %s AND device_type = %s AND device_id = %s AND channel = %s",
            SENSOR,
        ).fetchall()


def stored_readings(database_url: str) -> list[float]:
    return [row[0] for row in _sensor_rows(database_url, "value")]


def stored_count(database_url: str) -> int:
    """How many are stored, for the progress line (the database is under test: no rows fetched)."""
    return _sensor_rows(database_url, "count(*)")[0][0]


async def progress(
    stats: dict[str, Stats], publisher: Publisher, database_url: str, log: Log, stop: asyncio.Event
) -> None:
    while True:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), PROGRESS_SECONDS)
        if stop.is_set():
            return
        stored = await asyncio.to_thread(stored_count, database_url)
        parts = [
            f"{name} {s.answered}/{s.calls} ({sum(s.errors.values())} err)"
            for name, s in stats.items()
            if name != "telemetry"
        ]
        t = stats["telemetry"]
        parts.append(f"readings sent {t.calls}, acked {t.answered}, stored {stored}")
        memory = log.memory[-1][1] if log.memory else {}
        parts.append("RSS " + " ".join(f"{name} {mib:.0f}" for name, mib in memory.items()) + " MiB")
        print(f"[{log.elapsed():6.1f} s] " + "; ".join(parts), flush=True)


# --- the run ------------------------------------------------------------------------------------


async def soak(args: argparse.Namespace, hub: Deployment, database_url: str) -> dict[str, Any]:
    seconds = args.minutes * 60
    stop = asyncio.Event()
    stats = {name: Stats() for name in ("mcp-http", "mcp-ws", "device", "dashboard", "telemetry")}
    home = Stats()
    log = Log()
    publisher = Publisher(hub.broker.port, stats["telemetry"])
    tasks = [
        asyncio.ensure_future(coroutine)
        for coroutine in (
            mcp_traffic(hub, "mcp-http", stats["mcp-http"], stop),
            mcp_traffic(hub, "mcp-ws", stats["mcp-ws"], stop),
            device_traffic(hub, stats["device"], stop),
            dashboard_traffic(hub, stats["dashboard"], home, stop),
            telemetry_traffic(publisher, stop),
            faults(hub, log, seconds, args.crash_broker, stop),
            sample_memory(hub, log, max(5.0, seconds / 20), stop),
            progress(stats, publisher, database_url, log, stop),
        )
    ]
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.shield(asyncio.gather(*tasks)), seconds)
    stop.set()
    await asyncio.gather(*tasks)
    print(f"[{log.elapsed():6.1f} s] traffic stopped; draining the publisher and the worker", flush=True)

    deadline = time.monotonic() + args.drain
    while publisher.unacked() and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    unacked = publisher.unacked()
    publisher.close()
    acked = set(publisher.acked)
    values: list[float] = []
    while time.monotonic() < deadline:
        values = await asyncio.to_thread(stored_readings, database_url)
        if acked <= {int(v) for v in values}:
            break
        await asyncio.sleep(0.5)
    stored = {int(v) for v in values}
    log.memory.append((log.elapsed(), memory(hub)))
    health = {}
    for name, base in zip(("daphne-a", "daphne-b"), hub.bases, strict=True):
        try:
            health[name] = httpx.get(base + "/login/", timeout=5).status_code == 200
        except httpx.HTTPError:
            health[name] = False
    health["worker"] = hub.worker.alive()
    return {
        "stats": stats,
        "home": home,
        "log": log,
        "readings": {
            "sent": stats["telemetry"].calls,
            "acknowledged": len(acked),
            "unacknowledged at the end": unacked,
            "stored": len(values),
            "lost": len(acked - stored),
            "duplicates": len(values) - len(stored),
            "stored, never acknowledged": len(stored - acked),
        },
        "health": health,
    }


def report(result: dict[str, Any], hub: Deployment, args: argparse.Namespace) -> None:
    print(f"\nsoak: {args.minutes:g} min on {machine()}, load average {os.getloadavg()[0]:.1f} at the end")
    print("faults:")
    for line in result["log"].faults:
        print("  " + line)
    print("\n| traffic | rate/s | calls | answered | failed | failed attempts by kind | p50 ms | p99 ms |")
    print("|---|---|---|---|---|---|---|---|")
    for name, s in result["stats"].items():
        kinds = ", ".join(f"{kind} x{n}" for kind, n in s.errors.most_common()) or "none"
        extra = "; ".join(f"{k} {v}" for k, v in s.extra.items())
        kinds += f" ({extra})" if extra else ""
        p50, p99 = s.percentile(0.5) * 1e3, s.percentile(0.99) * 1e3
        print(
            f"| {name} | {RATES[name]:g} | {s.calls} | {s.answered} | {s.failed} | {kinds} "
            f"| {p50:.1f} | {p99:.1f} |"
        )
    home = result["home"]
    print(
        f"\n/ws/home/ listener: {home.extra['events']} events over {home.extra['connections']} connections; "
        f"failed connects: {dict(home.errors) or 'none'}"
    )
    print("readings (QoS 1):", json.dumps(result["readings"]))
    print("answering at the end:", json.dumps(result["health"]))
    names = [*(p.name for p in hub.processes()), "mosquitto"]
    print("\nRSS (MiB) over time:\n")
    print("| t (s) | " + " | ".join(names) + " |")
    print("|---" * (len(names) + 1) + "|")
    for at, sample in result["log"].memory:
        print(f"| {at:.0f} | " + " | ".join(f"{sample.get(n, 0):.0f}" for n in names) + " |")
    print("\nprocess starts:", {p.name: p.starts for p in hub.processes()})


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--database-url", default="postgres://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/7", help="a Redis database of its own")
    parser.add_argument(
        "--speed", type=float, default=1.0, help="multiply every rate (e.g. 5 to look for leaks sooner)"
    )
    parser.add_argument(
        "--crash-broker", action="store_true", help="SIGKILL the broker instead of stopping it cleanly"
    )
    parser.add_argument("--drain", type=float, default=90.0, help="seconds at most to drain at the end")
    args = parser.parse_args()
    for name in RATES:
        RATES[name] *= args.speed

    import redis

    workdir = Path(tempfile.mkdtemp(prefix="homehub-soak-"))
    database_url, drop = create_database(args.database_url, f"homehub_soak_{os.getpid()}")
    redis.Redis.from_url(args.redis_url).flushdb()
    hub = None
    try:
        hub = deploy(args, workdir, database_url)
        print(f"deployment up: daphne {hub.ports}, broker {hub.broker.port}, logs in {workdir}", flush=True)
        result = asyncio.run(soak(args, hub, database_url))
        report(result, hub, args)
        bad = result["readings"]["lost"] or result["readings"]["duplicates"]
        if bad:
            print("FAILED: readings lost or duplicated")
        return 1 if bad else 0
    finally:
        if hub is not None:
            for process in hub.processes():
                process.stop()
            hub.broker.stop()
        drop()
        redis.Redis.from_url(args.redis_url).flushdb()
        if os.environ.get("BENCH_KEEP"):
            print("kept", workdir)
        else:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(143))
    sys.exit(main())
