"""The demo's MQTT broker: the one at MQTT_URL if it answers, else a private Mosquitto on a
free loopback port (stopped with the demo), else none (the demo runs WebSocket agents only)."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from common.mqtt.connection import BrokerConfig, BrokerConfigError

START_TIMEOUT = 10.0


@dataclass
class DemoBroker:
    """Where the demo's MQTT agents connect (`url` None: nowhere) and how it was found."""

    url: str | None
    how: str
    process: subprocess.Popen[bytes] | None = None
    folder: tempfile.TemporaryDirectory[str] | None = None

    @property
    def address(self) -> tuple[str, int] | None:
        if self.url is None:
            return None
        config = BrokerConfig.from_settings(url=self.url)
        return config.host, config.port

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.folder is not None:
            self.folder.cleanup()


def _answers(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _mosquitto() -> str | None:
    return shutil.which("mosquitto") or next(
        (path for path in ("/usr/sbin/mosquitto", "/usr/local/sbin/mosquitto") if os.access(path, os.X_OK)),
        None,
    )


def _start_private(binary: str) -> DemoBroker:
    port = _free_port()
    folder = tempfile.TemporaryDirectory(prefix="homehub-demo-broker-")
    config = Path(folder.name) / "mosquitto.conf"
    lines = [f"listener {port} 127.0.0.1", "allow_anonymous true", "persistence false"]
    if os.geteuid() == 0:
        lines.append("user root")  # else it would switch to a user that may not exist
    config.write_text("\n".join(lines) + "\n")
    log = (Path(folder.name) / "mosquitto.log").open("wb")
    process = subprocess.Popen([binary, "-c", str(config)], stdout=log, stderr=subprocess.STDOUT)
    log.close()
    broker = DemoBroker(
        f"mqtt://127.0.0.1:{port}", "a private Mosquitto started for the demo", process, folder
    )
    deadline = time.monotonic() + START_TIMEOUT
    while not _answers("127.0.0.1", port):
        if process.poll() is not None or time.monotonic() > deadline:
            reason = ""
            with contextlib.suppress(OSError):
                reason = (Path(folder.name) / "mosquitto.log").read_text(errors="replace")[-500:]
            broker.stop()
            return DemoBroker(None, f"Mosquitto would not start ({reason.strip() or 'no output'})")
        time.sleep(0.05)
    return broker


def find_or_start(url: str) -> DemoBroker:
    """The demo's simulated agents speak plain MQTT: a TLS broker at MQTT_URL is left alone."""
    try:
        config = BrokerConfig.from_settings(url=url)
    except BrokerConfigError:
        config = None
    if config is not None and not config.tls and _answers(config.host, config.port):
        return DemoBroker(url, "the broker at MQTT_URL")
    binary = _mosquitto()
    if binary is None:
        return DemoBroker(None, f"no broker answers at {url} and no mosquitto binary is installed")
    return _start_private(binary)
