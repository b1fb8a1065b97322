"""The automations engine under load (issue 27's Benchmark): how soon a change starts the one
automation it matches among 1,000, and what the engine costs MQTT ingestion.

One database per invocation, as `bench_mqtt.py`: a fresh SQLite file (`make run`'s defaults,
the database channel layer), or with `--database-url` a bench database created (and dropped)
on that PostgreSQL server with Redis as the channel layer, as deployed. `DJANGO_DEBUG=0`.

Latency (target: p99 <= 20 ms). `manage.py serve --no-mqtt` runs the hub as deployed, the
engine in its process (AUTOMATIONS_IN_PROCESS, the default). The bench switches the light
`salon` on and off through its REST door (`PATCH /api/lights/salon`, a token with `control`),
every `--gap` seconds. One automation, `bench-match`, matches "salon on" (its action: the tool
call `set_light_state` garage on, mode queued). The latency of a change is from its audit
Event (written in the change's transaction) to the audit Event of the action's tool call made
by `automation:bench-match` (written in the action's transaction): an upper bound of "the
action started", since it includes the action's own write. Both times come from the hub's
clock, read from the database after the run, so the bench adds nothing to the path. Two sides:

- peer: only `bench-match` enabled (what the change costs with the engine doing one thing);
- 1,000: `bench-match` and 999 others across the seed lights (not salon, not garage), people,
  the alarm, sensor thresholds on a few zones and cron times that do not come due, none of
  which the change matches.

The ratio is p99(1,000) / p99(peer): the cost of the 999 the change does not concern.
AUTOMATION_RUNS_PER_MINUTE is raised for the serving process (one automation fires every
other change, far past the loop guard's 30 a minute).

Ingestion (target: with the engine >= 90 % of without). `bench_mqtt.py`'s worker phase: a
private Mosquitto, `manage.py mqtt_worker`, `--mqtt-count` QoS 1 readings from two publishers,
the rate to the last row committed. Without: no engine process. With: `manage.py
run_automations` running, holding the 1,000 above plus `--thresholds` sensor automations on
the zone being ingested (thresholds spread over the values sent, each crossed once: a notify
action). Rounds alternate without/with; the ratio is per round.

    .venv/bin/python bench/bench_automations.py                       # SQLite, ~2.5 minutes; PostgreSQL ~3.5
    .venv/bin/python bench/bench_automations.py --database-url postgres://postgres@127.0.0.1:5432/postgres
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_mqtt import phase_worker, show
from harness import (
    REDIS_BENCH_URL,
    ROOT,
    SETTLE_SECONDS,
    Mosquitto,
    free_port,
    machine,
    production_database,
    start_py_spy,
)

MATCH = "bench-match"
LATENCY_TARGET_MS = 20.0
INGEST_TARGET = 0.90


def mix(count: int) -> list[dict[str, Any]]:
    """`count` definitions the salon/garage changes do not match: a realistic spread of kinds."""
    lights = ["cocina", "dormitorio", "bano"]
    people = ["Carlos", "Ana"]
    zones = [("living_room", "temperature"), ("bedroom", "humidity"), ("office", "co2")]
    out = []
    for i in range(count):
        kind = i % 5
        trigger: dict[str, Any]
        if kind == 0:
            trigger = {"type": "light", "name": lights[i % 3], "to": "on" if i % 2 else "off"}
        elif kind == 1:
            trigger = {"type": "presence", "person": people[i % 2], "to": "home" if i % 4 < 2 else "away"}
            if i % 3 == 0:
                trigger = {"type": "presence", "who": "everyone", "to": "away"}
        elif kind == 2:
            trigger = {"type": "alarm", "to": "armed" if i % 2 else "disarmed"}
        elif kind == 3:
            zone, channel = zones[i % 3]
            trigger = {"type": "sensor", "zone": zone, "channel": channel, "above": 30 + i % 20}
            if i % 2:
                trigger["for_seconds"] = 300
        else:
            trigger = {"type": "time", "cron": f"{i % 60} {(time.gmtime().tm_hour + 6 + i % 12) % 24} * * *"}
        action = (
            {"tool": "set_light_state", "arguments": {"name": lights[(i + 1) % 3], "on": bool(i % 2)}}
            if i % 2
            else {"notify": f"bench automation {i}"}
        )
        out.append({"name": f"bench-{i:04d}", "triggers": [trigger], "actions": [action]})
    return out


def thresholds(zone: str, count: int, values: int) -> list[dict[str, Any]]:
    """`count` sensor automations on `zone`'s temperature, spread over the values bench_mqtt
    sends (20 + i/1000 for i < `values`, from each publisher)."""
    span = values / 2 / 1000
    return [
        {
            "name": f"bench-{zone}-{i:03d}",
            "triggers": [
                {
                    "type": "sensor",
                    "zone": zone,
                    "channel": "temperature",
                    "above": 20 + span * (i + 1) / (count + 1),
                }
            ],
            "actions": [{"notify": f"{zone} past threshold {i}"}],
        }
        for i in range(count)
    ]


def create(definitions: list[dict[str, Any]], owner: Any) -> None:
    from automations.definition import parse
    from automations.models import Automation

    Automation.objects.bulk_create(
        [
            Automation(name=d["name"], definition=parse(d).as_json(), enabled=True, enabled_by=owner)
            for d in definitions
        ]
    )


def wait_held(count: int, timeout: float) -> None:
    """Until an engine holds `count` automations (its lease rounds run every few seconds)."""
    from automations.models import Automation

    deadline = time.monotonic() + timeout
    while Automation.objects.filter(enabled=True).exclude(holder="").count() < count:
        if time.monotonic() > deadline:
            raise RuntimeError(f"the engine did not take {count} automations within {timeout:g} s")
        time.sleep(0.2)
    time.sleep(SETTLE_SECONDS)  # the round that took them loads them after the claim: let it end


def start(argv: list[str], env: dict[str, str], log: Path, root: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "manage.py", *argv], cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT
        )


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def wait_port(port: int, proc: subprocess.Popen[bytes], log: Path) -> None:
    import socket

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"serve exited: see {log}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError(f"serve did not listen within 60 s: see {log}")


def latency_side(args: argparse.Namespace, port: int, token: str) -> list[float]:
    """`--changes` salon-on changes (each followed by salon off) through the REST door; the
    latencies in seconds, read from the audit trail afterwards."""
    from audit.models import Event

    first = Event.objects.order_by("-id").values_list("id", flat=True).first() or 0
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    for i in range(2 * args.changes):
        conn.request("PATCH", "/api/lights/salon", json.dumps({"on": i % 2 == 0}), headers)
        response = conn.getresponse()
        response.read()
        if response.status != 200:
            raise RuntimeError(f"PATCH /api/lights/salon: {response.status}")
        time.sleep(args.gap)
    conn.close()
    actor = f"automation:{MATCH}"
    deadline = time.monotonic() + 10
    events = Event.objects.filter(id__gt=first)
    while events.filter(actor=actor).count() < args.changes and time.monotonic() < deadline:
        time.sleep(0.1)
    changes = list(
        events.filter(target="light:salon", after={"on": True}).order_by("id").values_list("at", flat=True)
    )
    actions = list(events.filter(actor=actor).order_by("id").values_list("at", flat=True))
    if len(actions) != len(changes):
        raise RuntimeError(f"{len(changes)} changes but {len(actions)} actions of {MATCH}")
    return [(a - c).total_seconds() for c, a in zip(changes, actions, strict=True)]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def show_latency(label: str, values: list[float]) -> None:
    print(
        f"  {label:<6} n={len(values)}  p50 {pct(values, 0.5) * 1e3:6.2f} ms"
        f"  p95 {pct(values, 0.95) * 1e3:6.2f} ms"
        f"  p99 {pct(values, 0.99) * 1e3:6.2f} ms  max {max(values) * 1e3:6.2f} ms",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database-url", help="a PostgreSQL server (a bench database is created there)")
    parser.add_argument(
        "--redis-url", default=REDIS_BENCH_URL, help="with --database-url: a Redis db (flushed)"
    )
    parser.add_argument("--automations", type=int, default=1000, help="enabled automations (with the match)")
    parser.add_argument("--changes", type=int, default=250, help="salon-on changes per side")
    parser.add_argument("--gap", type=float, default=0.03, help="seconds between changes")
    parser.add_argument("--thresholds", type=int, default=50, help="sensor automations on the ingested zone")
    parser.add_argument("--mqtt-count", type=int, default=30_000, help="QoS 1 readings per ingestion phase")
    parser.add_argument("--rounds", type=int, default=2, help="ingestion rounds (without, with)")
    parser.add_argument("--only", choices=["latency", "ingestion"])
    parser.add_argument("--py-spy", metavar="FILE", help="sample serve during the latency side of 1,000")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds at most per ingestion phase")
    parser.add_argument("--root", type=Path, default=ROOT, help="the HomeHub tree to run (default: this one)")
    args = parser.parse_args()
    args.root = args.root.resolve()
    args.publishers = 2  # for bench_mqtt.phase_worker
    sys.path.insert(0, str(args.root))
    workdir = Path(tempfile.mkdtemp(prefix="bench_automations_"))
    args.workdir = str(workdir)
    drop = production_database(args.database_url, workdir, f"homehub_bench_auto_{os.getpid()}")
    if args.database_url:  # PostgreSQL is deployed with Redis
        import redis

        redis.Redis.from_url(args.redis_url).flushdb()
        os.environ["REDIS_URL"] = args.redis_url
    began = time.monotonic()
    try:
        import django

        django.setup()
        from django.contrib.auth import get_user_model
        from django.core.management import call_command
        from django.db import connection

        from automations.models import Automation

        call_command("migrate", verbosity=0)
        call_command("seed_home", stdout=open(os.devnull, "w"))  # noqa: SIM115
        owner = get_user_model().objects.create_superuser("bench-owner", "bench@example.com", "pw-bench-x")
        env = {
            **os.environ,
            "PYTHONUNBUFFERED": "1",
            "AUTOMATION_RUNS_PER_MINUTE": "1000000",
            "MCP_RATE_LIMIT": "0",
        }
        print(f"database: {connection.vendor}; {machine()}; load {os.getloadavg()[0]:.2f}", flush=True)
        match = {
            "name": MATCH,
            "mode": "queued",
            "max_queued": 10,
            "triggers": [{"type": "light", "name": "salon", "to": "on"}],
            "actions": [{"tool": "set_light_state", "arguments": {"name": "garage", "on": True}}],
        }
        others = mix(args.automations - 1)
        create([match], owner)
        verdicts = []
        if args.only != "ingestion":
            out = subprocess.run(
                [sys.executable, "manage.py", "create_mcp_token", "bench", "--scopes", "read,control"],
                cwd=args.root, env=env, check=True, capture_output=True, text=True,
            ).stdout  # fmt: skip
            token = out.strip().splitlines()[-1]
            port = free_port()
            log = workdir / "serve.log"
            serve = start(["serve", "--no-mqtt", "--port", str(port)], env, log, args.root)
            try:
                wait_port(port, serve, log)
                wait_held(1, 30)
                print(
                    f"latency: {args.changes} salon-on changes per side through REST, "
                    f"every {args.gap * 1e3:g} ms"
                )
                warm_up = argparse.Namespace(**{**vars(args), "changes": min(50, args.changes)})
                latency_side(warm_up, port, token)  # not counted: first requests, first runs
                peer = latency_side(args, port, token)
                show_latency("peer", peer)
                create(others, owner)
                wait_held(args.automations, 30)
                profiler = start_py_spy(args.py_spy, serve.pid) if args.py_spy else None
                ours = latency_side(args, port, token)
                if profiler is not None:
                    profiler.send_signal(signal.SIGINT)
                    profiler.wait(30)
                    print(
                        f"  py-spy samples of serve, {args.automations:,} side (raw, folded): {args.py_spy}"
                    )
                show_latency(f"{args.automations:,}", ours)
            finally:
                stop(serve)
            ratio = pct(ours, 0.99) / pct(peer, 0.99)
            met = pct(ours, 0.99) * 1e3 <= LATENCY_TARGET_MS
            verdicts.append(met)
            print(
                f"  p99 {args.automations:,}/peer {ratio:.2f}x; target p99 <= {LATENCY_TARGET_MS:g} ms:",
                "met" if met else "NOT met",
                flush=True,
            )
        else:
            create(others, owner)
        if args.only != "latency":
            print(
                f"ingestion: {args.mqtt_count:,} QoS 1 readings per phase; with: run_automations holding "
                f"{args.automations:,} + {args.thresholds} thresholds on the ingested zone",
                flush=True,
            )
            ratios = []
            for r in range(args.rounds):
                row = {}
                for side in ("without", "with"):
                    zone = f"ing{r}{side}"
                    engine = None
                    if side == "with":
                        create(thresholds(zone, args.thresholds, args.mqtt_count), owner)
                        total = Automation.objects.filter(enabled=True).count()
                        Automation.objects.update(holder="")  # serve's hold: gone with it
                        engine = start(["run_automations"], env, workdir / f"engine-{zone}.log", args.root)
                        wait_held(total, 30)
                    broker = Mosquitto(workdir / f"broker-{zone}").start()
                    try:
                        row[side] = phase_worker(
                            argparse.Namespace(**{**vars(args), "py_spy": None}),
                            broker,
                            1,
                            args.mqtt_count,
                            zone,
                            env,
                        )
                    finally:
                        broker.stop()
                        if engine is not None:
                            stop(engine)
                    show(side, row[side])
                ratios.append(row["with"]["rate"] / row["without"]["rate"])
                print(f"  with/without {ratios[-1]:.0%}", flush=True)
            met = statistics.median(ratios) >= INGEST_TARGET
            verdicts.append(met)
            print(
                f"  median with/without {statistics.median(ratios):.0%} "
                f"({min(ratios):.0%}-{max(ratios):.0%}); target >= {INGEST_TARGET:.0%}:",
                "met" if met else "NOT met",
            )
        print(f"took {time.monotonic() - began:.0f} s; load {os.getloadavg()[0]:.2f}")
    finally:
        if drop is not None:
            from django.db import connections

            connections.close_all()
            drop()
        if os.environ.get("BENCH_KEEP"):
            print("kept", workdir)
        else:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
