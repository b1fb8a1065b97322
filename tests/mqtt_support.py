"""Helpers for the MQTT tests: a private Mosquitto on a free port, workers and a hub as real
processes, and a publisher that waits for the broker's acknowledgement of every message."""

from __future__ import annotations

import contextlib
import json
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion

from tests.conftest import free_port

ROOT = Path(__file__).resolve().parent.parent
MOSQUITTO = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
SHIPPED_CONF = ROOT / "deploy" / "mosquitto" / "mosquitto.conf"


def wait_until(check: Callable[[], Any], timeout: float = 20.0, every: float = 0.1, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or check}")
        time.sleep(every)


class Broker:
    """A private Mosquitto with the shipped queue settings; anonymous unless `secure` (then
    the shipped password file and ACL rules apply, with the given users); `extra`: more
    configuration lines."""

    def __init__(
        self,
        folder: Path,
        *,
        secure: bool = False,
        users: dict[str, str] | None = None,
        extra: tuple[str, ...] = (),
    ) -> None:
        self.folder = folder
        self.extra = extra
        self.port = free_port()
        self.url = f"mqtt://127.0.0.1:{self.port}"
        self.secure = secure
        self.users = users or {}
        self.proc: subprocess.Popen[bytes] | None = None
        folder.mkdir(parents=True, exist_ok=True)
        self.config = folder / "mosquitto.conf"
        self.config.write_text(self._config())

    def _config(self) -> str:
        lines = []
        for line in SHIPPED_CONF.read_text().splitlines():
            key = line.split(" ", 1)[0]
            if key in {"listener", "persistence_location", "password_file", "acl_file", "allow_anonymous"}:
                continue
            lines.append(line)
        lines += [  # what Debian's main file sets, the shipped file being a conf.d part
            f"listener {self.port} 127.0.0.1",
            "persistence true",
            f"persistence_location {self.folder}/",
            "user root",  # started as root, it would switch to a user that cannot write the test's folder
        ]
        if self.secure:
            passwd = self.folder / "passwd"
            passwd.write_text("")
            passwd.chmod(0o600)
            for user, password in self.users.items():
                subprocess.run(["mosquitto_passwd", "-b", str(passwd), user, password], check=True)
            lines += [
                "allow_anonymous false",
                f"password_file {passwd}",
                f"acl_file {ROOT / 'deploy' / 'mosquitto' / 'homehub.acl'}",
            ]
        else:
            lines.append("allow_anonymous true")
        return "\n".join([*lines, *self.extra]) + "\n"

    def start(self) -> Broker:
        self.proc = subprocess.Popen(
            [MOSQUITTO, "-c", str(self.config)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        deadline = time.monotonic() + 10
        while True:
            with (
                contextlib.suppress(OSError),
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5),
            ):
                return self
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    "mosquitto did not start: " + (self.proc.stderr.read() or b"").decode()[-2000:]
                )
            time.sleep(0.05)

    def stop(self) -> None:
        """A clean stop: Mosquitto saves its sessions and queues first."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)

    def restart(self) -> None:
        self.stop()
        self.start()


@contextlib.contextmanager
def broker(folder: Path, **options: Any) -> Iterator[Broker]:
    running = Broker(folder, **options).start()
    try:
        yield running
    finally:
        running.stop()


class Relay:
    """A TCP relay between MQTT clients and the broker that a test can hold back one way:
    after `hold()`, what the clients send (their PUBACKs among it) is dropped here, while what
    the broker sends still reaches them; a client whose side closes has its broker side closed
    too. A worker killed meanwhile has committed its batches, and the broker never hears
    that it did: the window between storing and acknowledging, held open."""

    def __init__(self, broker_port: int) -> None:
        self.broker_port = broker_port
        self.port = free_port()
        self.url = f"mqtt://127.0.0.1:{self.port}"
        self.holding = threading.Event()
        self._server = socket.create_server(("127.0.0.1", self.port))
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def hold(self) -> None:
        self.holding.set()

    def close(self) -> None:
        self._closed = True
        self._server.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            broker_side = socket.create_connection(("127.0.0.1", self.broker_port))
            threading.Thread(target=self._pump, args=(client, broker_side, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(broker_side, client, False), daemon=True).start()

    def _pump(self, source: socket.socket, target: socket.socket, upstream: bool) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                if not (upstream and self.holding.is_set()):
                    target.sendall(data)
        for sock in (source, target):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()


class Process:
    """A hub process (`manage.py <command>`), its stderr kept for failures."""

    def __init__(self, args: list[str], env: dict[str, str], log: Path) -> None:
        self.log = log
        self._file = log.open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=env,
            stdout=self._file,
            stderr=subprocess.STDOUT,
        )

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 20) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._file.close()
        return self.proc.returncode


def worker_env(env: dict[str, str], url: str, **settings: str) -> dict[str, str]:
    return {
        **env,
        "MQTT_URL": url,
        "MQTT_BROADCAST_SECONDS": "0.2",
        "PYTHONUNBUFFERED": "1",
        **settings,
    }


@contextlib.contextmanager
def worker(env: dict[str, str], log: Path, *args: str) -> Iterator[Process]:
    proc = Process(["mqtt_worker", *args], env, log)
    try:
        yield proc
    finally:
        proc.stop()


def client(url: str, client_id: str = "", inflight: int = 20, **credentials: str) -> mqtt.Client:
    """A connected paho client (its network loop running)."""
    port = int(url.rsplit(":", 1)[1])
    c = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=client_id)
    c.max_inflight_messages_set(inflight)
    if credentials:
        c.username_pw_set(credentials["username"], credentials["password"])
    c.connect("127.0.0.1", port)
    c.loop_start()
    return c


def publish_all(c: mqtt.Client, messages: list[tuple[str, Any]], qos: int = 1) -> None:
    """Publish and wait until the broker has acknowledged every message."""
    infos = [
        c.publish(topic, payload if isinstance(payload, str | bytes) else json.dumps(payload), qos=qos)
        for topic, payload in messages
    ]
    for info in infos:
        info.wait_for_publish(30)
        assert info.is_published()


def readings(
    count: int, *, device: str = "env_01", start: float | None = None, zone: str = "lab"
) -> list[tuple]:
    """`count` distinct temperature readings, one a second, as (topic, payload)."""
    start = start or time.time() - count
    return [
        (
            f"office/{zone}/sensor/{device}/temperature",
            {"value": round(20 + i / 1000, 3), "unit": "c", "timestamp": round((start + i) * 1000)},
        )
        for i in range(count)
    ]


def approve_mqtt_agents(*agent_ids: str) -> None:
    """Register these MQTT agents as the owner does (`register_agent --transport mqtt`), so that
    their announcements are served at once (an unknown one waits for the owner's approval)."""
    from devices.agents.services import register_agent

    for agent_id in agent_ids:
        register_agent(agent_id, transport="mqtt", actor="test", interface="system")
