"""How tests start a hub's web process: daphne (or `manage.py serve`) on a loopback port,
waited for until it answers, stopped gently or killed, and restarted on the same port.
(`tests/mqtt_support.Process` runs other management commands, such as the MQTT worker.)"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

from tests.conftest import free_port

ROOT = Path(__file__).resolve().parent.parent
READY_PATH = "/.well-known/oauth-protected-resource"  # answered without a login or a database row
# A hub with the MCP conformance suite's fixture tools (tests/conformance_app) installed.
CONFORMANCE_SETTINGS = "homehub.settings_conformance"


class HubProcess:
    """A hub process over the environment `env` (the test database's, from `live_env`).
    `serve`: through `manage.py serve` (the README's way, with the MQTT worker in the same
    process) instead of bare daphne, with `serve_args` (e.g. `--demo`). Its output goes to a
    file, never a pipe: a chatty hub must never block on a full one."""

    def __init__(
        self,
        env: dict[str, str],
        *,
        serve: bool = False,
        serve_args: tuple[str, ...] = (),
        port: int | None = None,
    ) -> None:
        self.env = env
        self.serve = serve or bool(serve_args)
        self.serve_args = serve_args
        self.port = port or free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 (closed by close(), after the last restart)

    def _command(self) -> list[str]:
        if self.serve:
            return [
                *(sys.executable, "manage.py", "serve", "--host", "127.0.0.1", "--port", str(self.port)),
                *self.serve_args,
            ]
        return [
            sys.executable,
            "-m",
            "daphne",
            "-b",
            "127.0.0.1",
            "-p",
            str(self.port),
            "homehub.asgi:application",
        ]

    def start(self, timeout: float = 30) -> HubProcess:
        """Start it and wait until it answers HTTP; the log's tail if it dies or never does."""
        self.proc = subprocess.Popen(
            self._command(), cwd=ROOT, env=self.env, stdout=self._log, stderr=subprocess.STDOUT
        )
        deadline = time.monotonic() + timeout
        while not self.answers():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop(kill=True)
                raise RuntimeError("the hub did not start: " + self.output()[-2000:])
            time.sleep(0.05)
        return self

    def answers(self) -> bool:
        try:
            httpx.get(self.base + READY_PATH, timeout=1)
        except httpx.HTTPError:
            return False
        return True

    def stop(self, *, kill: bool = False, timeout: float = 10) -> int | None:
        """SIGTERM and wait (SIGKILL if it lingers); `kill`: SIGKILL at once, so that no
        shutdown handler runs, as when the machine loses the process."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode

    def restart(self, *, kill: bool = False) -> HubProcess:
        """Stop it (or kill it) and start it again on the same port."""
        self.stop(kill=kill)
        return self.start()

    def output(self) -> str:
        self._log.seek(0)
        return self._log.read().decode(errors="replace")

    def close(self) -> None:
        self.stop()
        self._log.close()


@contextlib.contextmanager
def running_hub(
    env: dict[str, str], *, serve: bool = False, serve_args: tuple[str, ...] = (), **settings: str
) -> Iterator[HubProcess]:
    """A started `HubProcess` with extra environment `settings`, stopped at the end."""
    process = HubProcess({**env, **settings}, serve=serve, serve_args=serve_args)
    try:
        yield process.start()
    finally:
        process.close()


def log_in_over_http(browser: httpx.Client, username: str, password: str, *, login: str = "/login/") -> None:
    """Log `browser` (an HTTP client of a live hub) in at the dashboard's login form, or the
    admin's (`login="/admin/login/"`), as a person would; its CSRF cookie then signs its forms."""
    browser.get(login)
    form = {"username": username, "password": password, "csrfmiddlewaretoken": browser.cookies["csrftoken"]}
    assert browser.post(login, data=form).status_code == 302


def create_account(username: str, password: str, role: str = "owner"):
    """A dashboard account of household `role` (`common.roles`): an owner, who may do
    everything, unless the test is about roles."""
    from django.contrib.auth import get_user_model

    from common import roles

    user = get_user_model().objects.create_user(username, password=password)
    roles.assign(user, role)
    return user
