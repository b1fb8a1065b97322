"""Failover of the MQTT workers under traffic: two `manage.py mqtt_worker` processes in one shared
group, a sensor publishing distinct QoS 1 readings at a steady rate, and worker `b` stopped
(SIGTERM) or killed (SIGKILL) mid-stream, then started again. The figures docs/MQTT.md quotes:
readings published, stored, lost and stored twice; how long after the stop the readings of the
outage were stored (the takeover: worker `a` opening `b`'s session); and how much of the traffic
`b` stored again once back.

Loopback only, a fresh private Mosquitto (the shipped settings) and a throwaway database
(SQLite in a temporary folder, or a bench database created and dropped on the PostgreSQL
server of `--database-url`); it stops by itself (about 20 s per fault).

    python bench/bench_failover.py
    python bench/bench_failover.py --database-url postgres://postgres@127.0.0.1:5432/postgres
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt
from harness import ROOT, Mosquitto, production_database
from paho.mqtt.enums import CallbackAPIVersion

sys.path.insert(0, str(ROOT))


class Sensor(threading.Thread):
    """Publishes reading i (value i) every 1/rate s at QoS 1; remembers when each was sent."""

    def __init__(self, port: int, zone: str, rate: float) -> None:
        super().__init__(daemon=True)
        self.client = mqtt.Client(
            CallbackAPIVersion.VERSION2, client_id=f"sensor-{zone}", clean_session=False
        )
        self.client.max_inflight_messages_set(1000)
        self.client.connect("127.0.0.1", port)
        self.client.loop_start()
        self.zone, self.interval = zone, 1 / rate
        self.sent: list[float] = []
        self.acked: list[Any] = []
        self.stopping = threading.Event()

    def run(self) -> None:
        start = time.time() - 86400
        while not self.stopping.is_set():
            i = len(self.sent)
            payload = json.dumps({"value": i, "unit": "c", "timestamp": start + i / 1000})
            self.sent.append(time.time())
            self.acked.append(
                self.client.publish(f"office/{self.zone}/sensor/flow/temperature", payload, qos=1)
            )
            time.sleep(self.interval)

    def stop(self) -> int:
        self.stopping.set()
        self.join()
        for info in self.acked:
            info.wait_for_publish(30)
        self.client.disconnect()
        self.client.loop_stop()
        return sum(info.is_published() for info in self.acked)


def worker(name: str, broker: Mosquitto, env: dict[str, str], workdir: Path) -> subprocess.Popen[bytes]:
    log = (workdir / f"{name}.log").open("ab")
    return subprocess.Popen(
        [sys.executable, "manage.py", "mqtt_worker", "--url", broker.url, "--client-id", name],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )


def wait_until(check: Any, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.1)
    return False


def run(fault: str, args: argparse.Namespace, env: dict[str, str], workdir: Path) -> dict[str, Any]:
    from devices.mqtt.models import MqttWorker
    from devices.telemetry.models import TelemetryReading

    zone = f"failover_{fault}"
    broker = Mosquitto(workdir / f"broker-{fault}").start()
    procs = {name: worker(name, broker, env, workdir) for name in ("a", "b")}
    try:
        if not wait_until(
            lambda: MqttWorker.objects.filter(connected=True, client_id__in="ab").count() == 2, 60
        ):
            raise RuntimeError(f"the workers did not connect: see {workdir}")
        time.sleep(1)
        sensor = Sensor(broker.port, zone, args.rate)
        sensor.start()
        time.sleep(args.before)
        procs["b"].send_signal(signal.SIGKILL if fault == "kill" else signal.SIGTERM)
        stopped_index = len(sensor.sent)
        procs["b"].wait(30)
        time.sleep(args.down)
        back_index = len(sensor.sent)
        procs["b"] = worker("b", broker, env, workdir)
        time.sleep(args.after)
        published = sensor.stop()
        total = len(sensor.sent)
        rows = TelemetryReading.objects.filter(zone=zone)
        wait_until(lambda: rows.count() >= published, args.timeout)
        time.sleep(2)  # anything late, or twice
        b_back = MqttWorker.objects.get(client_id="b").counters.get("stored", 0)
        repeats = sum(w.counters.get("repeats", 0) for w in MqttWorker.objects.filter(client_id__in="ab"))
        stored = list(rows.values_list("value", "received_at"))
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.terminate()
                proc.wait(30)
        broker.stop()
    first_stored = {}
    for value, received in stored:
        first_stored.setdefault(int(value), received.timestamp())
    delay = {i: first_stored[i] - sensor.sent[i] for i in first_stored}
    normal = [delay[i] for i in range(stopped_index) if i in delay]
    # From a second before the fault (what b held unacknowledged) until b's return.
    outage = [delay[i] for i in range(max(0, stopped_index - int(args.rate)), back_index) if i in delay]
    return {
        "fault": fault,
        "published": published,
        "sent": total,
        "stored rows": len(stored),
        "lost": total - len(first_stored),
        "stored twice": len(stored) - len(first_stored),
        "redeliveries recognised (not stored again)": repeats,
        "published while b was away": back_index - stopped_index,
        "b away s": round(args.down, 1),
        "storage delay before the fault, median / max s": (
            round(statistics.median(normal), 3),
            round(max(normal), 3),
        ),
        "storage delay from 1 s before the fault to b's return, median / max s": (
            round(statistics.median(outage), 3),
            round(max(outage), 3),
        ),
        "published after b's return": total - back_index,
        "stored by b after its return": b_back,
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rate", type=float, default=200.0, help="readings a second")
    parser.add_argument("--before", type=float, default=3.0, help="seconds of traffic before the fault")
    parser.add_argument("--down", type=float, default=6.0, help="seconds worker b stays away")
    parser.add_argument("--after", type=float, default=5.0, help="seconds of traffic after b's return")
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--database-url", help="a PostgreSQL server (a bench database is created there)")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="bench_failover_"))
    drop = production_database(args.database_url, workdir, f"homehub_failover_{os.getpid()}")
    env = {**os.environ, "MQTT_SHARED_GROUP": "homehub", "PYTHONUNBUFFERED": "1"}
    try:
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        for fault in ("stop", "kill"):
            result = run(fault, args, env, workdir)
            print(f"worker b {'stopped (SIGTERM)' if fault == 'stop' else 'killed (SIGKILL)'}:")
            for key, value in result.items():
                if key != "fault":
                    print(f"    {key}: {value}")
    finally:
        if drop is not None:
            from django.db import connections

            connections.close_all()
            drop()
    print(f"logs: {workdir}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
