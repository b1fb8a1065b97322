"""The deployment rehearsal: `deploy/` as shipped, brought up the way docs/DEPLOY.md and
docs/MQTT.md say, in a private temporary root on loopback and free ports.

Mosquitto runs from a main file like Debian 12's stock one (pid_file, persistence,
persistence_location, log_dest, include_dir) with the shipped `mosquitto.conf` in its
`conf.d`; the password file is made by running the `mosquitto_passwd` commands of
docs/MQTT.md (the doc is what runs; passwords on their stdin), the ACL is the shipped one.
The hub runs with the environment example's variables and values, and the units' own
`ExecStart` lines: a daphne (its `ExecStartPost` start check included) and an MQTT worker
under the documented broker user, with a systemd notification socket of the test's own. A
simulated SOMS agent (`manage.py simulate_mqtt_agent`) under its documented broker user
publishes telemetry and is called through `/mcp` with a token from `create_mcp_token`.

What is rewritten, and only because it must be: paths under / move into the temporary root,
the listener and daphne ports are free ones, the database and Redis are the test's, and the
example's placeholders get values. Mosquitto runs as root when the test does (it would switch
to the `mosquitto` user, who cannot enter the test's private folder), and `chown` and
`systemctl` lines of the docs are what the test does itself.

The first test reads the same files and checks that every name (users, topics, paths,
units, commands) agrees across `deploy/`, docs/DEPLOY.md and docs/MQTT.md: the next drift
fails here.
"""

from __future__ import annotations

import glob
import json
import os
import re
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
import redis
from rq import Worker

from devices.mqtt.models import MqttWorker
from devices.telemetry.models import TelemetryReading
from fel.models import BatchJob
from tests.deploy_support import DEPLOY, DOCS, ROOT, commands, env_example, section, unit
from tests.fel_support import REAL
from tests.mcp_endpoint.test_mcp_http import sse_messages
from tests.mqtt_support import MOSQUITTO, wait_until

DEPLOY_MD, MQTT_MD = DOCS / "DEPLOY.md", DOCS / "MQTT.md"
UNITS = DEPLOY / "systemd"
SYSTEM = "/etc/systemd/system/"
BROKER_STEP = "Security (`deploy/mosquitto/`)"
# Debian 12's /etc/mosquitto/mosquitto.conf, as the mosquitto package installs it.
DEBIAN_MAIN = """\
# Place your local configuration in /etc/mosquitto/conf.d/
#
# A full description of the configuration file is at
# /usr/share/doc/mosquitto/examples/mosquitto.conf.example

pid_file /run/mosquitto/mosquitto.pid

persistence true
persistence_location /var/lib/mosquitto/

log_dest file /var/log/mosquitto/mosquitto.log

include_dir /etc/mosquitto/conf.d
"""


# --- what the files say ----------------------------------------------------------------------


def directives(path: Path) -> dict[str, list[str]]:
    """A Mosquitto configuration or ACL file: each directive's values, in order."""
    found: dict[str, list[str]] = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            key, _, value = line.partition(" ")
            found.setdefault(key, []).append(value.strip())
    return found


def installed_units() -> dict[str, Path]:
    """docs/DEPLOY.md's `cp deploy/systemd/...` lines: installed unit name -> shipped file."""
    installed = {}
    for line in commands(DEPLOY_MD, "Install (Debian 12)", 2):
        words = line.split()
        if words[0] != "cp" or not words[1].startswith("deploy/systemd/"):
            continue
        *sources, target = words[1:]
        for source in sources:
            for path in sorted(glob.glob(str(ROOT / source))):
                name = target.removeprefix(SYSTEM) or Path(path).name
                installed[name] = Path(path)
    return installed


def enabled_units() -> list[str]:
    (line,) = [c for c in commands(DEPLOY_MD, "Install (Debian 12)", 2) if c.startswith("systemctl enable")]
    return [word for word in line.split()[2:] if not word.startswith("-")]


def template_of(name: str) -> str:
    """`homehub-daphne@8001` -> `homehub-daphne@.service`; other names as they are."""
    if "@" in name:
        return name.split("@", 1)[0] + "@.service"
    return name if "." in name else name + ".service"


def broker_step() -> list[str]:
    return commands(MQTT_MD, BROKER_STEP)


def documented_broker_users() -> list[str]:
    """The users docs/MQTT.md creates with mosquitto_passwd, the `-c` one first."""
    users = []
    for line in broker_step():
        words = line.split()
        if words[0] == "mosquitto_passwd":
            users.append(words[-1])
    return users


# --- the names ---------------------------------------------------------------------------------


def test_every_name_agrees_across_deploy_and_the_docs():
    from django.core.management import get_commands

    env = env_example()
    conf = directives(DEPLOY / "mosquitto" / "mosquitto.conf")
    acl = directives(DEPLOY / "mosquitto" / "homehub.acl")
    install = commands(DEPLOY_MD, "Install (Debian 12)", 0)
    step = broker_step()

    # The broker user of the workers: the environment, the ACL, both docs.
    worker_user = env["MQTT_USERNAME"]
    assert acl["user"][0] == worker_user  # the first block of rules is the workers'
    assert documented_broker_users()[0] == worker_user
    assert f"mosquitto_passwd -c {conf['password_file'][0]} {worker_user}" in step
    assert set(acl["user"]) <= set(documented_broker_users())  # every ACL user is created
    for doc in (DEPLOY_MD, MQTT_MD, DEPLOY / "homehub.env.example"):
        named = re.findall(r"(?:broker user|workers' user)[\s:]+`([^`]+)`", doc.read_text())
        assert set(named) <= {worker_user}, f"{doc.name} names another broker user: {named}"
    assert f"`{worker_user}`" in DEPLOY_MD.read_text()

    # The broker's files: where the docs put them is where mosquitto.conf looks.
    copies = {words[1]: words[2] for words in map(str.split, step) if words[0] == "cp"}
    assert copies["deploy/mosquitto/homehub.acl"] == conf["acl_file"][0]
    assert copies["deploy/mosquitto/mosquitto.conf"].startswith("/etc/mosquitto/conf.d/")
    assert not {"persistence_location", "pid_file", "log_dest"} & conf.keys()  # Debian's main file has them

    # Units: what DEPLOY.md installs exists, what it enables and what units refer to is installed.
    installed = installed_units()
    assert set(installed.values()) == set(UNITS.iterdir())  # every shipped unit, installed
    for name in enabled_units():
        assert template_of(name) in installed, f"DEPLOY.md enables {name}, never installed"
    clone = re.search(r"git clone \S+ (\S+)", " ".join(install)).group(1)
    env_file = next(w.split()[-1] for w in install if "deploy/homehub.env.example" in w)
    for name, path in installed.items():
        spec = unit(path)
        for key in ("Requires", "Wants", "After", "PartOf", "WantedBy"):
            for ref in " ".join(spec.get(key, [])).split():
                if ref.startswith("homehub"):
                    assert template_of(ref) in installed, f"{name} {key}={ref}: no such unit"
        if "User" in spec:
            assert spec["User"] == ["homehub"] and "--group --home /var/lib/homehub homehub" in " ".join(
                install
            )
            assert spec["WorkingDirectory"] == [clone]
            assert spec["EnvironmentFile"] == [env_file]
            for command in spec["ExecStart"] + spec.get("ExecStartPost", []):
                program = next(w for w in command.split() if w.startswith("/opt/") or w.startswith(clone))
                assert program.startswith(clone + "/.venv/bin/"), command
        for command in spec.get("ExecStart", []) + spec.get("ExecStartPost", []):
            if "manage.py" in command:
                name_of_command = command.split("manage.py", 1)[1].split()[0]
                assert name_of_command in get_commands(), f"{path.name}: no command {name_of_command}"
        for writable in " ".join(spec.get("ReadWritePaths", [])).split():
            assert writable in {"/var/lib/homehub", env["PROMETHEUS_MULTIPROC_DIR"]}

    # Paths of the environment: made by DEPLOY.md, writable by the units, served by nginx.
    made = " ".join(install)
    for name in ("DJANGO_STATIC_ROOT", "FEL_ROOT"):
        assert env[name].startswith("/var/lib/homehub/") and env[name] in made
    metrics_dir = env["PROMETHEUS_MULTIPROC_DIR"]
    assert metrics_dir in unit(installed["homehub-metrics.service"])["ExecStart"][0]
    nginx = (DEPLOY / "nginx" / "homehub.conf").read_text()
    assert f"alias {env['DJANGO_STATIC_ROOT']}/;" in nginx

    # Instances: nginx's upstreams are the enabled daphne ports; workers' client ids as documented.
    daphnes = sorted(n.split("@")[1] for n in enabled_units() if n.startswith("homehub-daphne@"))
    assert sorted(re.findall(r"server 127\.0\.0\.1:(\d+)", nginx)) == daphnes
    worker_unit = unit(installed["homehub-mqtt-worker@.service"])
    client_id = re.search(r"--client-id (\S+)%i", worker_unit["ExecStart"][0]).group(1)
    for doc in (DEPLOY_MD, MQTT_MD):
        assert f"`{client_id}<instance>`" in doc.read_text()
    for doc in (DEPLOY_MD, DEPLOY / "homehub.env.example"):
        assert set(re.findall(r"\$share/(\w+)/", doc.read_text())) == {env["MQTT_SHARED_GROUP"]}

    # Commands the docs tell operators to run exist; variables of the example are read.
    for doc in (DEPLOY_MD, MQTT_MD):
        for command in re.findall(r"manage\.py (\w+)", doc.read_text()):
            assert command in get_commands(), f"{doc.name}: no command {command}"
    source = "".join(p.read_text() for app in ("homehub", "devices") for p in (ROOT / app).rglob("*.py"))
    for name in env:
        assert f'"{name}"' in source, f"the example sets {name}, which nothing reads"

    # Topics: the docs' topic table names the topics the code uses.
    from common.mqtt import topics

    table = section(MQTT_MD, "Topics")
    for topic in (topics.DISCOVERY, topics.HUB_STATUS, topics.ALARM_COMMANDS, topics.ALARM_STATE):
        assert f"`{topic}`" in table or f"`{topic}`," in table
    assert f"`{topics.worker_status('{group}', '{client_id}')}`" in table
    for probe in topics.probes("{client_id}").values():
        assert f"`{probe}`" in table


# --- the rehearsal -----------------------------------------------------------------------------


class Rehearsal:
    """The temporary root, and what runs in it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.port = free_port()
        self.passwords = {user: secrets.token_urlsafe(12) for user in documented_broker_users()}
        self.procs: list[tuple[subprocess.Popen[bytes], Path]] = []

    def path(self, absolute: str) -> str:
        """An absolute path of the docs, moved into the temporary root."""
        return str(self.root) + absolute if absolute.startswith("/") else absolute

    def install_mosquitto(self) -> None:
        """What `apt install mosquitto` leaves: its folders, and Debian's main file."""
        main = DEBIAN_MAIN
        for absolute in (
            "/etc/mosquitto/conf.d",
            "/run/mosquitto",
            "/var/lib/mosquitto",
            "/var/log/mosquitto",
        ):
            Path(self.path(absolute)).mkdir(parents=True, exist_ok=True)
        for absolute in ("/etc/mosquitto/", "/run/mosquitto/", "/var/lib/mosquitto/", "/var/log/mosquitto/"):
            main = main.replace(f" {absolute}", f" {self.path(absolute)}")
        if os.geteuid() == 0:
            main += "user root\n"
        Path(self.path("/etc/mosquitto/mosquitto.conf")).write_text(main)

    def run_broker_step(self) -> None:
        """docs/MQTT.md's commands, as written, with their paths in the temporary root."""
        for line in broker_step():
            words = [self.path(w) if w.startswith("/etc/") else w for w in shlex.split(line)]
            if words[0] == "mosquitto_passwd":
                password = self.passwords[words[-1]]
                feed = f"{password}\n{password}\n"
                subprocess.run(words, input=feed, text=True, check=True, capture_output=True, cwd=ROOT)
            elif words[0] in {"cp", "chmod"}:
                subprocess.run(words, check=True, cwd=ROOT)
            elif words[0] == "chown":
                if os.geteuid() == 0:
                    subprocess.run(words, check=True)
            elif words[:2] == ["systemctl", "restart"] and words[2] == "mosquitto":
                self.start_mosquitto()
            else:
                raise AssertionError(f"docs/MQTT.md runs {line!r}: teach the rehearsal what it does")

    def start_mosquitto(self) -> None:
        etc = Path(self.path("/etc/mosquitto"))
        for part in (etc / "conf.d").iterdir():  # the shipped part: its paths and port moved
            text = part.read_text().replace("/etc/mosquitto/", str(etc) + "/")
            part.write_text(text.replace("listener 1883 127.0.0.1", f"listener {self.port} 127.0.0.1"))
        broker = self.spawn([MOSQUITTO, "-c", str(etc / "mosquitto.conf")], os.environ.copy(), "mosquitto")
        log = Path(self.path("/var/log/mosquitto/mosquitto.log"))
        wait_until(
            lambda: answers(self.port) or (broker.poll() is not None and fail(log)),
            what="the broker listening",
        )

    def start_redis(self) -> str:
        """The host's Redis (`apt install redis-server`), on a free port; the example's URL for it."""
        port = free_port()
        folder = Path(self.path("/var/lib/redis"))
        folder.mkdir(parents=True)
        command = [shutil.which("redis-server") or "/usr/bin/redis-server", "--port", str(port)]
        self.spawn([*command, "--bind", "127.0.0.1", "--save", "", "--dir", str(folder)], {}, "redis")
        wait_until(lambda: answers(port), what="Redis listening")
        return env_example()["REDIS_URL"].replace(":6379/", f":{port}/")

    def spawn(self, command: list[str], env: dict[str, str], name: str) -> subprocess.Popen[bytes]:
        log = self.root / f"{name}.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
        self.procs.append((proc, log))
        return proc

    def unit_command(self, unit_file: str, key: str, instance: str) -> list[str]:
        """A unit's command line for an instance, the venv's programs being this one's."""
        line = unit(UNITS / unit_file)[key][0].replace("%i", instance)
        words = shlex.split(line)
        bin_dir = Path(sys.executable).parent
        words = [str(bin_dir / Path(w).name) if "/.venv/bin/" in w else w for w in words]
        if words[0] == "/usr/bin/env":  # env -u NAME program...
            words = [shutil.which("env") or "env", *words[1:]]
        return words

    def logs(self) -> str:
        """The end of every process's output, for a failure's message."""
        return "\n".join(
            f"--- {log.stem}:\n{log.read_text(errors='replace')[-1500:]}" for _, log in self.procs
        )

    def stop(self) -> list[tuple[str, int | None]]:
        """SIGTERM each process, newest first, allowing what the units allow systemd to wait
        (TimeoutStopSec) before it kills."""
        allowed = float(unit(UNITS / "mqtt-worker@.service")["TimeoutStopSec"][0])
        codes = []
        for proc, log in reversed(self.procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(allowed)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            codes.append((log.stem, proc.returncode))
        return codes


def read_pings(notifications: socket.socket, pings: list[str]) -> None:
    """What systemd does with a unit's notification socket: read every datagram, until closed."""
    while True:
        try:
            pings.append(notifications.recv(100).decode())
        except TimeoutError:
            continue
        except OSError:  # closed at the rehearsal's end
            return


def free_port() -> int:
    from tests.conftest import free_port as free

    return free()


def fail(log: Path) -> bool:
    raise AssertionError("the broker stopped: " + (log.read_text() if log.exists() else "no log"))


def answers(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), 0.5).close()
    except OSError:
        return False
    return True


def hub_env(rehearsal: Rehearsal, base: dict[str, str], redis_url: str) -> dict[str, str]:
    """The example's variables and values; what must change, changed."""
    env = {k: v for k, v in base.items() if not k.startswith(("DJANGO_", "MQTT_", "HEALTHZ_"))}
    for name, value in env_example().items():
        if value.startswith("/"):
            value = rehearsal.path(value)
        env[name] = value
    Path(env["PROMETHEUS_MULTIPROC_DIR"]).mkdir(parents=True)  # what homehub-metrics.service does
    Path(env["FEL_ROOT"]).mkdir(parents=True)
    env.update(
        DATABASE_URL=base["DATABASE_URL"],
        REDIS_URL=redis_url,
        TASKS_REDIS_URL=env["TASKS_REDIS_URL"].replace(":6379/", f":{urlsplit(redis_url).port}/"),
        DJANGO_SECRET_KEY=secrets.token_urlsafe(50),
        MQTT_URL=env["MQTT_URL"].replace(":1883", f":{rehearsal.port}"),
        MQTT_PASSWORD=rehearsal.passwords[env["MQTT_USERNAME"]],
        METRICS_TOKEN=secrets.token_urlsafe(16),
        PYTHONUNBUFFERED="1",
    )
    return env


def manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )


def mcp(base: str, token: str, method: str, params: dict) -> dict:
    """One MCP request over /mcp as nginx passes it on (X-Forwarded-Proto: https)."""
    headers = {
        "authorization": f"Bearer {token}",
        "accept": "application/json, text/event-stream",
        "x-forwarded-proto": "https",
    }
    with httpx.Client(base_url=base, headers=headers, timeout=15) as http:
        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": "2025-06-18"},
        }
        session = http.post("/mcp", json=init).headers["mcp-session-id"]
        body = {"jsonrpc": "2.0", "id": 2, "method": method, "params": params}
        answer = http.post("/mcp", json=body, headers={"mcp-session-id": session})
    return sse_messages(answer.text)[-1]["result"]


@pytest.mark.live
@pytest.mark.timeout(150)
def test_the_documented_deployment_comes_up_and_works(live_env, tmp_path):
    rehearsal = Rehearsal(tmp_path / "root")
    rehearsal.root.mkdir()
    notifications = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notifications.bind(str(tmp_path / "notify"))
    notifications.settimeout(30)
    try:
        rehearsal.install_mosquitto()
        rehearsal.run_broker_step()
        broker_log = Path(rehearsal.path("/var/log/mosquitto/mosquitto.log")).read_text()
        assert "Error" not in broker_log and "running" in broker_log, broker_log

        env = hub_env(rehearsal, live_env, rehearsal.start_redis())
        one_off = {k: v for k, v in env.items() if k != "PROMETHEUS_MULTIPROC_DIR"}  # as DEPLOY.md says
        created = manage(one_off, "create_mcp_token", "claude", "--scopes", "read,control,devices,fel")
        assert created.returncode == 0, created.stderr
        token = created.stdout.strip().splitlines()[-1]

        port = str(free_port())
        rehearsal.spawn(rehearsal.unit_command("daphne@.service", "ExecStart", port), env, "daphne")
        started = subprocess.run(
            rehearsal.unit_command("daphne@.service", "ExecStartPost", port),
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=90,
        )
        assert started.returncode == 0, started.stdout + started.stderr  # the unit's start check
        base = f"http://127.0.0.1:{port}"

        worker_env = {**env, "NOTIFY_SOCKET": str(tmp_path / "notify"), "WATCHDOG_USEC": "2000000"}
        rehearsal.spawn(
            rehearsal.unit_command("mqtt-worker@.service", "ExecStart", "1"), worker_env, "worker"
        )
        said = {notifications.recv(100).decode() for _ in range(2)}
        assert said == {"READY=1", "WATCHDOG=1"}  # systemd's Type=notify and its watchdog
        # Then read the pings as systemd does, for the rest of the rehearsal.
        pings: list[str] = []
        reader = threading.Thread(target=read_pings, args=(notifications, pings), daemon=True)
        reader.start()

        # The documented broker user and the shipped ACL: every subscription delivers.
        client_id = "homehub-worker-1"
        wait_until(
            lambda: (
                (w := MqttWorker.objects.filter(client_id=client_id, connected=True).first())
                and {s["state"] for s in w.subscriptions} == {"ok"}
            ),
            timeout=30,
            what="the worker subscribed, its probes back",
        )
        probe = manage(one_off, "mqtt_health", "--client-id", client_id)
        assert probe.returncode == 0, probe.stdout

        agent = "esp32_01"  # docs/MQTT.md's agent user
        registered = manage(one_off, "register_agent", agent, "--transport", "mqtt")  # DEPLOY.md's step
        assert registered.returncode == 0, registered.stdout
        rehearsal.spawn(
            [
                *(sys.executable, "manage.py", "simulate_mqtt_agent", agent, "--telemetry", "0.5"),
                *("--url", env["MQTT_URL"], "--username", agent, "--password", rehearsal.passwords[agent]),
            ],
            one_off,
            "agent",
        )
        wait_until(
            lambda: TelemetryReading.objects.filter(device_id=agent).count() >= 8, timeout=30, what="readings"
        )
        tool = f"{agent}__set_led_color"
        wait_until(
            lambda: tool in {t["name"] for t in mcp(base, token, "tools/list", {})["tools"]},
            timeout=30,
            what="the agent's tools on /mcp",
        )
        called = mcp(base, token, "tools/call", {"name": tool, "arguments": {"r": 0, "g": 128, "b": 255}})
        assert not called.get("isError"), called
        assert "LED color set to (0, 128, 255)" in called["content"][0]["text"]

        # The long work: a batch uploaded over REST, queued as the example says (RQ on Redis) and
        # run by the tasks unit.
        assert env["TASKS_BACKEND"] == "rq"
        tasks = rehearsal.spawn(
            rehearsal.unit_command("homehub-tasks.service", "ExecStart", ""), env, "tasks"
        )
        https = {"authorization": f"Bearer {token}", "x-forwarded-proto": "https"}
        xml = [("files", (p.name, p.read_bytes(), "application/xml")) for p in REAL[:2]]
        posted = httpx.post(base + "/api/invoices/batches", files=xml, headers=https, timeout=30)
        assert posted.status_code == 202, posted.text
        wait_until(
            lambda: BatchJob.objects.get(pk=posted.json()["id"]).state == "done" or tasks.poll() is not None,
            timeout=60,
            what="the batch done by the tasks worker",
        )
        assert BatchJob.objects.get(pk=posted.json()["id"]).done == 2
        assert Worker.all(connection=redis.Redis.from_url(env["TASKS_REDIS_URL"]))  # RQ's, on its Redis

        full = httpx.get(base + "/healthz?full=1", headers={"x-forwarded-proto": "https"}, timeout=10)
        assert full.status_code == 200, full.text
        assert json.loads(full.text)["checks"]["mqtt"] == {"ok": True, "state": "connected"}
        assert pings and set(pings) == {"WATCHDOG=1"}, pings  # the watchdog went on pinging
        metrics = httpx.get(base + "/metrics", headers={"authorization": f"Bearer {env['METRICS_TOKEN']}"})
        assert (
            f'homehub_mqtt_subscription_ok{{topic="$share/homehub/office/#",worker="{client_id}"}} 1.0'
            in (metrics.text)
        )
    except Exception as exc:
        raise AssertionError(f"{exc}\n{rehearsal.logs()}") from exc
    finally:
        exits = rehearsal.stop()
        notifications.close()
    assert dict(exits) == {"tasks": 0, "agent": 0, "worker": 0, "daphne": 0, "redis": 0, "mosquitto": 0}, (
        f"{exits}\n{rehearsal.logs()}"
    )
