"""MQTT telemetry ingestion: the worker's sustained rate into the database beside the ceiling,
a bare paho subscriber receiving the same stream, in the same run (issue 8's Benchmark).

Everything stays on loopback and stops by itself. Each phase starts a fresh private
Mosquitto on a free port with the shipped `deploy/mosquitto/mosquitto.conf` settings (queues
sized, persistence on; anonymous, as in the tests), then one consumer:

- ceiling: a bare paho 2 subscriber (MQTT 5, the worker's Receive Maximum, paho's own
  automatic acknowledgement), counting messages and nothing else;
- worker: `manage.py mqtt_worker` (`DJANGO_DEBUG=0`) storing into a throwaway database
  (SQLite in a temporary folder, or a bench database created and dropped on the PostgreSQL
  server of `--database-url`, with Redis as the channel layer then, as deployed).

`--publishers` processes, connected and with their payloads built beforehand, then publish
a burst of `--count` distinct seed-004 readings (`{"value", "unit", "timestamp"}` on
`office/<zone>/sensor/<device>/temperature`) as fast as paho lets them, at QoS 0 or 1.
Rates run from the moment the publishers are told to go to the last message received
(ceiling) or the last row committed (worker, polled every 20 ms); the publisher rate is to
the last publisher's end (QoS 1: every PUBACK back). Loss is messages published minus
messages received, or minus rows in the database; at QoS 1 it must be zero.

    python bench/bench_mqtt.py                        # QoS 0 and 1, 200,000 each: ~2 minutes
    python bench/bench_mqtt.py --repeat 3 --qos 1     # the spread
    python bench/bench_mqtt.py --database-url postgres://postgres@127.0.0.1:5432/postgres

The worker reads its usual settings from the environment (`MQTT_BATCH_SIZE=1000 python
bench/bench_mqtt.py` ...). Consumer CPU is utime + stime from `/proc/<pid>/stat`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from harness import REDIS_BENCH_URL, ROOT, Mosquitto, cpu_seconds, production_database, start_py_spy

POLL_SECONDS = 0.02
IDLE_SECONDS = 5.0  # nothing more arrived for this long after the publishers ended: done


# --- the child processes: publishers and the bare subscriber ------------------------------


def paho_client(port: int, **options: Any):
    import paho.mqtt.client as mqtt
    from paho.mqtt.enums import CallbackAPIVersion

    return mqtt.Client(CallbackAPIVersion.VERSION2, protocol=mqtt.MQTTv5, **options)


def _length(n: int) -> bytes:
    """MQTT's variable-length "remaining length"."""
    out = bytearray()
    while True:
        n, digit = n >> 7, n & 0x7F
        out.append(digit | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _packet(first: int, body: bytes) -> bytes:
    return bytes([first]) + _length(len(body)) + body


def _string(text: str) -> bytes:
    raw = text.encode()
    return struct.pack("!H", len(raw)) + raw


def run_publisher(args: argparse.Namespace) -> None:
    """Publish `--count` readings when told `go` on stdin; print when the broker has them all.

    A minimal MQTT 3.1.1 publisher on a plain socket (CONNECT, PUBLISH, PUBACK, PINGREQ):
    every packet is encoded before the clock starts and written in chunks of 100, with at
    most `--inflight` QoS 1 messages unacknowledged (packet ids never reused while in
    flight). paho's publish() costs tens of µs a message, as much as the consumers we
    measure, on the same two cores; this costs next to nothing. The end is the last PUBACK
    (QoS 1) or the PINGRESP that follows the last PUBLISH (QoS 0: the broker has read them).
    """
    sock = socket.create_connection(("127.0.0.1", args.port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    connect = b"\x00\x04MQTT\x04\x02" + struct.pack("!H", 600) + _string(f"bench-{args.device}-{os.getpid()}")
    sock.sendall(_packet(0x10, connect))
    if sock.recv(4) != b"\x20\x02\x00\x00":
        raise SystemExit("the broker refused the publisher")
    topic = _string(f"office/{args.zone}/sensor/{args.device}/temperature")
    start_ms = int(time.time() * 1000) - args.count - 1000
    packets = []
    for i in range(args.count):
        reading = {"value": round(20 + i / 1000, 3), "unit": "c", "timestamp": start_ms + i}
        payload = json.dumps(reading).encode()
        packet_id = struct.pack("!H", i % 65535 + 1) if args.qos else b""
        packets.append(_packet(0x30 | args.qos << 1, topic + packet_id + payload))
    chunks = [b"".join(packets[i : i + 100]) for i in range(0, len(packets), 100)]
    sizes = [len(packets[i : i + 100]) for i in range(0, len(packets), 100)]
    window = min(args.inflight, 65000)
    acked = 0
    pinged = threading.Event()
    progress = threading.Condition()

    def read() -> None:
        nonlocal acked
        pending = b""
        while data := sock.recv(65536):
            pending += data
            at, count = 0, 0
            while len(pending) - at >= 2 and len(pending) - at >= 2 + pending[at + 1]:
                if pending[at] == 0x40:  # PUBACK (a short packet: one length byte)
                    count += 1
                elif pending[at] == 0xD0:  # PINGRESP
                    pinged.set()
                at += 2 + pending[at + 1]
            pending = pending[at:]
            with progress:
                acked += count
                progress.notify()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    print("ready", flush=True)
    sys.stdin.readline()
    started = time.time()
    sent = 0
    for chunk, size in zip(chunks, sizes, strict=True):
        if args.qos:
            with progress:
                while sent + size - acked > window:
                    progress.wait(1)
        sock.sendall(chunk)
        sent += size
    if args.qos:
        with progress:
            while acked < sent and progress.wait(args.timeout):
                pass
    sock.sendall(b"\xc0\x00")  # PINGREQ: answered after everything before it
    pinged.wait(args.timeout)
    ended = time.time()
    published = acked if args.qos else sent
    sock.sendall(b"\xe0\x00")  # DISCONNECT
    sock.close()
    print(json.dumps({"published": published, "started": started, "ended": ended}), flush=True)


def run_subscriber(args: argparse.Namespace) -> None:
    """Count what arrives on office/+/+/+/+ until `--count` or idle; print the times."""
    from paho.mqtt.packettypes import PacketTypes
    from paho.mqtt.properties import Properties

    state = {"received": 0, "first": 0.0, "last": 0.0}
    subscribed = threading.Event()

    def on_message(client, userdata, message):
        now = time.time()
        if not state["received"]:
            state["first"] = now
        state["received"] += 1
        state["last"] = now

    c = paho_client(args.port)
    c.on_connect = lambda client, *a: client.subscribe("office/+/+/+/+", qos=args.qos)
    c.on_subscribe = lambda *a: subscribed.set()
    c.on_message = on_message
    properties = Properties(PacketTypes.CONNECT)
    properties.ReceiveMaximum = args.receive_maximum
    c.connect("127.0.0.1", args.port, properties=properties)
    c.loop_start()
    subscribed.wait(10)
    cpu = time.process_time()
    print("ready", flush=True)
    deadline = time.monotonic() + args.timeout
    while state["received"] < args.count and time.monotonic() < deadline:
        if state["received"] and time.time() - state["last"] > IDLE_SECONDS:
            break
        time.sleep(0.05)
    state["cpu"] = time.process_time() - cpu
    c.disconnect()
    c.loop_stop()
    print(json.dumps(state), flush=True)


# --- the bench itself ---------------------------------------------------------------------


def child(role: str, *options: Any) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, __file__, "--role", role, *map(str, options)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def expect_line(proc: subprocess.Popen[str], what: str) -> str:
    line = proc.stdout.readline().strip()
    if not line:
        raise RuntimeError(f"{what} ended early (exit {proc.wait()})")
    return line


class Publishers:
    """`count` messages split over `n` processes, ready before the clock starts."""

    def __init__(self, port: int, qos: int, count: int, n: int, zone: str, timeout: float) -> None:
        shares = [count // n + (1 if i < count % n else 0) for i in range(n)]
        options = ["--port", port, "--qos", qos, "--zone", zone, "--timeout", timeout]
        self.procs = [
            child("publish", *options, "--count", share, "--device", f"pub{i}")
            for i, share in enumerate(shares)
        ]
        for proc in self.procs:
            expect_line(proc, "a publisher")

    def go(self) -> float:
        started = time.time()
        for proc in self.procs:
            proc.stdin.write("go\n")
            proc.stdin.flush()
        return started

    def results(self) -> tuple[int, float]:
        """(messages published, when the last publisher ended)."""
        reports = [json.loads(expect_line(proc, "a publisher")) for proc in self.procs]
        for proc in self.procs:
            proc.wait(10)
        return sum(r["published"] for r in reports), max(r["ended"] for r in reports)

    def kill(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def phase_ceiling(args: argparse.Namespace, broker: Any, qos: int, count: int, zone: str) -> dict[str, Any]:
    sub = child(
        "subscribe", "--port", broker.port, "--qos", qos, "--count", count,
        "--receive-maximum", args.receive_maximum, "--timeout", args.timeout,
    )  # fmt: skip
    publishers = None
    try:
        expect_line(sub, "the subscriber")
        publishers = Publishers(broker.port, qos, count, args.publishers, zone, args.timeout)
        started = publishers.go()
        published, published_at = publishers.results()
        state = json.loads(expect_line(sub, "the subscriber"))
        sub.wait(10)
    finally:
        if publishers:
            publishers.kill()
        if sub.poll() is None:
            sub.kill()
            sub.wait()
    return summary(published, published_at, state["received"], state["last"], started, state["cpu"])


def summary(
    published: int, published_at: float, landed: int, landed_at: float, started: float, cpu: float
) -> dict[str, Any]:
    return {
        "published": published,
        "publish_rate": published / (published_at - started),
        "landed": landed,
        "rate": landed / (landed_at - started) if landed else 0.0,
        "seconds": landed_at - started,
        "loss": published - landed,
        "cpu_us_per_msg": cpu / max(landed, 1) * 1e6,
    }


def phase_worker(
    args: argparse.Namespace, broker: Any, qos: int, count: int, zone: str, env: dict[str, str]
) -> dict[str, Any]:
    from django.db import connection

    from devices.telemetry.models import TelemetryReading

    table = connection.ops.quote_name(TelemetryReading._meta.db_table)

    def newest_id() -> int:
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT MAX(id) FROM {table}")
            return cursor.fetchone()[0] or 0

    base = newest_id()
    online = threading.Event()
    watcher = paho_client(broker.port)
    watcher.on_connect = lambda client, *a: client.subscribe("homehub/status", qos=1)
    watcher.on_message = lambda c, u, m: m.payload == b"online" and online.set()
    watcher.connect("127.0.0.1", broker.port)
    watcher.loop_start()
    log = open(Path(args.workdir) / f"worker-{zone}.log", "wb")  # noqa: SIM115
    worker = subprocess.Popen(
        [
            sys.executable, "manage.py", "mqtt_worker", "--url", broker.url,
            "--client-id", f"bench-{zone}-{uuid.uuid4().hex[:6]}",
        ],
        cwd=args.root, env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    publishers = profiler = None
    try:
        if not online.wait(30):
            raise RuntimeError("the worker did not come online: see " + log.name)
        time.sleep(0.5)  # its start-up chores (state out, first status report) out of the way
        publishers = Publishers(broker.port, qos, count, args.publishers, zone, args.timeout)
        if args.py_spy:
            profiler = start_py_spy(f"{args.py_spy}.{zone}", worker.pid)
        cpu_before = cpu_seconds(worker.pid)
        started = publishers.go()
        reporter: dict[str, Any] = {}
        waiting = threading.Thread(
            target=lambda: reporter.update(zip(("n", "at"), publishers.results(), strict=True))
        )
        waiting.start()
        last, last_change = base, time.time()
        deadline = time.monotonic() + args.timeout
        while time.monotonic() < deadline:
            now_id = newest_id()
            now = time.time()
            if now_id != last:
                last, last_change = now_id, now
            if now_id - base >= count:
                break
            if reporter and now - max(last_change, reporter["at"]) > IDLE_SECONDS:
                break
            time.sleep(POLL_SECONDS)
        cpu_after = cpu_seconds(worker.pid)
        if profiler is not None:
            profiler.send_signal(signal.SIGINT)
            profiler.wait(30)
            print(f"  py-spy samples of the worker (raw, folded stacks): {args.py_spy}.{zone}")
        waiting.join(args.timeout)
        landed = TelemetryReading.objects.filter(zone=zone).count()
    finally:
        if publishers:
            publishers.kill()
        if profiler is not None and profiler.poll() is None:
            profiler.kill()
            profiler.wait()
        worker.terminate()
        try:
            worker.wait(30)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()
        log.close()
        watcher.disconnect()
        watcher.loop_stop()
    return summary(reporter["n"], reporter["at"], landed, last_change, started, cpu_after - cpu_before)


def show(label: str, r: dict[str, Any]) -> None:
    print(
        f"  {label:<8} {r['rate']:9,.0f} msg/s  {r['landed']:,}/{r['published']:,} in {r['seconds']:.2f} s, "
        f"loss {r['loss']:,}, publishers {r['publish_rate']:,.0f} msg/s, "
        f"consumer CPU {r['cpu_us_per_msg']:.0f} µs/msg",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--count", type=int, default=200_000, help="messages per QoS 1 burst")
    parser.add_argument("--count-qos0", type=int, help="messages per QoS 0 burst (default: --count)")
    parser.add_argument("--qos", default="0,1", help="which QoS levels, e.g. 1")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--publishers", type=int, default=2, help="publisher processes")
    parser.add_argument("--only", choices=["ceiling", "worker"], help="skip the other consumer")
    parser.add_argument("--database-url", help="a PostgreSQL server (a bench database is created there)")
    parser.add_argument(
        "--redis-url",
        default=REDIS_BENCH_URL,
        help="with --database-url: a Redis database of its own (flushed)",
    )
    parser.add_argument("--py-spy", metavar="FILE", help="sample each worker into FILE.<phase>")
    parser.add_argument("--root", type=Path, default=ROOT, help="the HomeHub tree to run (default: this one)")
    parser.add_argument("--timeout", type=float, default=150.0, help="seconds at most per phase")
    # for the child processes
    parser.add_argument("--role", choices=["publish", "subscribe"], help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--zone", help=argparse.SUPPRESS)
    parser.add_argument("--device", help=argparse.SUPPRESS)
    parser.add_argument("--inflight", type=int, default=1000, help=argparse.SUPPRESS)
    parser.add_argument("--receive-maximum", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.role:
        args.qos = int(args.qos)
    if args.role == "publish":
        return run_publisher(args)
    if args.role == "subscribe":
        return run_subscriber(args)

    args.root = args.root.resolve()
    sys.path.insert(0, str(args.root))  # its settings, models and migrations
    args.workdir = tempfile.mkdtemp(prefix="bench_mqtt_")
    drop = production_database(args.database_url, Path(args.workdir), f"homehub_bench_{os.getpid()}")
    if args.database_url:  # PostgreSQL is deployed with Redis
        import redis

        redis.Redis.from_url(args.redis_url).flushdb()
        os.environ["REDIS_URL"] = args.redis_url
    try:
        import django

        django.setup()
        from django.conf import settings
        from django.core.management import call_command
        from django.db import connection

        call_command("migrate", verbosity=0)
        args.receive_maximum = settings.MQTT_RECEIVE_MAXIMUM
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        levels = [int(q) for q in args.qos.split(",")]
        print(
            f"database: {connection.vendor}; publishers: {args.publishers}; cores: {os.cpu_count()}; "
            f"worker batch {settings.MQTT_BATCH_SIZE} / {settings.MQTT_BATCH_SECONDS} s, "
            f"receive maximum {settings.MQTT_RECEIVE_MAXIMUM}, queue {settings.MQTT_QUEUE_LIMIT}",
            flush=True,
        )
        results: dict[tuple[int, str], list[dict[str, Any]]] = {}
        for rep in range(args.repeat):
            for qos in levels:
                count = args.count if qos else (args.count_qos0 or args.count)
                print(f"run {rep + 1}, QoS {qos}, {count:,} messages", flush=True)
                row: dict[str, dict[str, Any]] = {}
                for who in ("ceiling", "worker"):
                    if args.only and who != args.only:
                        continue
                    zone = f"q{qos}r{rep}{who[0]}"
                    broker = Mosquitto(Path(args.workdir) / f"broker-{zone}").start()
                    try:
                        if who == "ceiling":
                            r = phase_ceiling(args, broker, qos, count, zone)
                        else:
                            r = phase_worker(args, broker, qos, count, zone, env)
                    finally:
                        broker.stop()
                    row[who] = r
                    results.setdefault((qos, who), []).append(r)
                    show(who, r)
                if len(row) == 2:
                    ratio = row["worker"]["rate"] / row["ceiling"]["rate"]
                    results.setdefault((qos, "ratio"), []).append({"rate": ratio})
                    print(f"  worker/ceiling {ratio:.0%}", flush=True)
        print("summary (median, min-max over runs):")
        for (qos, who), runs in sorted(results.items()):
            rates = [r["rate"] for r in runs]
            if who == "ratio":
                spread = f"{min(rates):.0%}-{max(rates):.0%}"
                print(f"  QoS {qos} worker/ceiling {statistics.median(rates):.0%} ({spread})")
                continue
            losses = sum(r["loss"] for r in runs)
            print(
                f"  QoS {qos} {who:<8} {statistics.median(rates):9,.0f} msg/s "
                f"({min(rates):,.0f}-{max(rates):,.0f}), loss {losses:,} in total"
            )
        ratios = results.get((1, "ratio"))
        q1_loss = sum(r["loss"] for r in results.get((1, "worker"), []))
        if ratios:
            met = statistics.median(ratios_ := [r["rate"] for r in ratios]) >= 0.75 and q1_loss == 0
            print(
                "target (QoS 1 worker >= 75 % of the bare subscriber, no loss):",
                "met" if met else "NOT met",
                f"(median {statistics.median(ratios_):.0%}, loss {q1_loss})",
            )
    finally:
        if drop is not None:
            from django.db import connections

            connections.close_all()
            drop()
        if os.environ.get("BENCH_KEEP"):
            print("kept", args.workdir)
        else:
            shutil.rmtree(args.workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
