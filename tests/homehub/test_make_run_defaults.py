"""What `make run` serves with nothing set: no debug pages, a secret key of its own kept across
restarts (never Django's public development key), plain HTTP on loopback with its own CSS and
JavaScript, and a first screen that says where it listens and that it is no internet server."""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from devices.mqtt.models import MqttWorker
from homehub.state import INSTALLATION_ID_FILE, SECRET_KEY_FILE, installation_id, kept_secret_key
from tests.hub_support import ROOT, HubProcess, log_in_over_http
from tests.mqtt_support import broker, wait_until

STATIC = ROOT / "dashboard" / "static" / "dashboard"


def make_run_env(live_env: dict[str, str], state: Path) -> dict[str, str]:
    """`make run`'s environment: none of the DJANGO_* settings, its state in `state`."""
    env = {
        k: v
        for k, v in live_env.items()
        if not k.startswith(("DJANGO_", "HOMEHUB_ADMIN", "METRICS_")) and k != "MQTT_CLIENT_ID"
    }
    return {**env, "HOMEHUB_STATE_DIR": str(state)}


@pytest.mark.live
def test_a_hub_started_as_make_run_starts_it(live_env, tmp_path):
    env = make_run_env(live_env, tmp_path)
    hub = HubProcess(env, serve=True)
    admin = subprocess.run(
        [sys.executable, "manage.py", "ensure_admin", "--host", "127.0.0.1", "--port", str(hub.port)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert admin.returncode == 0, admin.stderr
    password = re.search(r"with password: (\S+)", admin.stdout).group(1)
    key_file = tmp_path / SECRET_KEY_FILE
    key = key_file.read_text().strip()
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    try:
        hub.start()
        first_screen = hub.output()
        assert f"plain HTTP at http://127.0.0.1:{hub.port}/, on this machine only" in first_screen
        assert "not for the internet without TLS" in first_screen
        with httpx.Client(base_url=hub.base, timeout=10) as browser:
            # No debug page: an unknown address is a plain 404, an error shows no settings.
            missing = browser.get("/no-such-page/")
            assert missing.status_code == 404
            assert "DEBUG = True" not in missing.text and "URLconf" not in missing.text
            # Plain HTTP on loopback: no redirect to HTTPS, no HSTS, cookies usable over HTTP.
            login = browser.get("/login/")
            assert login.status_code == 200
            assert "strict-transport-security" not in login.headers
            assert "secure" not in login.headers["set-cookie"].lower()
            assert "script-src 'self'" in login.headers["content-security-policy"]
            # The dashboard's own files, without collectstatic.
            for name, kind in (("app.css", "text/css"), ("app.js", "javascript")):
                asset = browser.get(f"/static/dashboard/{name}")
                assert asset.status_code == 200 and kind in asset.headers["content-type"]
                assert asset.text == (STATIC / name).read_text()
            log_in_over_http(browser, "admin", password)
            assert browser.get("/").status_code == 200

            # Restarted, the hub keeps its key: the login survives.
            hub.restart()
            assert key_file.read_text().strip() == key
            assert browser.get("/").status_code == 200
        assert key not in hub.output() + admin.stdout + admin.stderr  # never printed
    finally:
        hub.close()


@pytest.mark.live
def test_on_every_interface_the_first_screen_warns(live_env, tmp_path):
    env = make_run_env(live_env, tmp_path)
    # `HOST=0.0.0.0 make run` (the last --host counts); the test still reaches it on loopback.
    hub = HubProcess(env, serve_args=("--no-mqtt", "--host", "0.0.0.0"))
    try:
        hub.start()
        assert "WARNING: HomeHub serves plain HTTP on every network interface" in hub.output()
        assert "Never expose it to the internet like this" in hub.output()
    finally:
        hub.close()


def test_the_generated_key_is_kept_once_and_shared(tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    second.mkdir()
    unwritable = tmp_path / "file" / "state"
    (tmp_path / "file").write_text("")
    key, path = kept_secret_key([unwritable, first, second])  # first does not exist
    assert path == second / SECRET_KEY_FILE and len(key) >= 50
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert os.listdir(second) == [SECRET_KEY_FILE]  # no temporary file left
    assert kept_secret_key([unwritable, second]) == (key, path)  # every process, every start
    assert kept_secret_key([unwritable]) is None


def test_without_a_state_folder_for_the_key_check_warns(tmp_path):
    (tmp_path / "file").write_text("")
    env = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")}
    env["HOMEHUB_STATE_DIR"] = str(tmp_path / "file" / "state")  # nobody can write there
    done = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "homehub.W001" in done.stderr and "logins end when it stops" in done.stderr


@pytest.mark.live
def test_two_installations_on_one_broker_each_keep_their_own_session(live_env, tmp_path):
    """Two checkouts' `make run` on one machine join the same broker: each under its own client
    id (its installation's), which its first screen names with the broker, and neither knocks
    the other off."""
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    with broker(tmp_path / "broker") as mosquitto:
        hubs = [
            HubProcess({**make_run_env(live_env, tmp_path / name), "MQTT_URL": mosquitto.url}, serve=True)
            for name in ("one", "two")
        ]
        try:
            for hub in hubs:
                hub.start()
            screens = [hub.output() for hub in hubs]
            ids = [
                re.search(r"client id (homehub-worker-[0-9a-f]{8})\b", screen).group(1) for screen in screens
            ]
            assert ids[0] != ids[1]
            assert all(f"with the MQTT worker: broker {mosquitto.url}, client id" in s for s in screens)
            for name, client_id in zip(("one", "two"), ids, strict=True):
                kept = (tmp_path / name / INSTALLATION_ID_FILE).read_text().strip()
                assert client_id == f"homehub-worker-{kept}"
            wait_until(
                lambda: MqttWorker.objects.filter(client_id__in=ids, connected=True).count() == 2,
                what="both workers linked",
            )
            hubs[1].restart()  # a restart keeps its id, and its session
            assert f"client id {ids[1]}" in hubs[1].output().split("HomeHub on")[-1]
            wait_until(
                lambda: MqttWorker.objects.filter(client_id__in=ids, connected=True).count() == 2,
                what="both workers linked again",
            )
            assert "lost the broker" not in hubs[0].output()  # the other never took its session
        finally:
            for hub in hubs:
                hub.close()


def test_each_installation_has_its_own_id(tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    first = installation_id([one], "host:/a")
    assert first == installation_id([one], "host:/b")  # kept: the same at every start
    assert first != installation_id([two], "host:/a")
    assert stat.S_IMODE((one / INSTALLATION_ID_FILE).stat().st_mode) == 0o600
    (tmp_path / "file").write_text("")
    nowhere = [tmp_path / "file" / "state"]  # no folder takes it: the host and folder decide
    assert installation_id(nowhere, "host:/a") == installation_id(nowhere, "host:/a")
    assert installation_id(nowhere, "host:/a") != installation_id(nowhere, "host:/b")
