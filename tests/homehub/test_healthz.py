"""`/healthz` on a real daphne: 200 while the process can serve (a broker outage only degrades
it, and says so), 503 naming what is down when it cannot (the database or Redis unreachable);
`/healthz?full=1` 503 as soon as any dependency, the broker included, is down. The hub keeps
answering throughout."""

from __future__ import annotations

import shutil
import subprocess

import httpx
import pytest

from tests.conftest import free_port
from tests.devices_support import hub
from tests.homehub.test_metrics import scrape
from tests.mqtt_support import broker, wait_until, worker, worker_env

pytestmark = pytest.mark.live


def health(base: str, full: bool = False) -> tuple[int, dict]:
    response = httpx.get(base + "/healthz" + ("?full=1" if full else ""), timeout=10)
    return response.status_code, response.json()


def health_once(base: str, code: int, timeout: float = 20.0, full: bool = False) -> dict:
    """The body of the first `/healthz` (`?full=1`) answer with status `code`."""
    return wait_until(
        lambda: (r := health(base, full))[0] == code and r, timeout, what=f"/healthz full={full} {code}"
    )[1]


def test_a_broker_outage_degrades_the_web_tier_without_taking_it_out(live_env, tmp_path):
    with broker(tmp_path / "broker") as mosquitto:
        env = worker_env(live_env, mosquitto.url, MQTT_CLIENT_ID="homehub-worker")
        with hub(env) as base, worker(env, tmp_path / "worker.log"):
            body = health_once(base, 200, full=True)
            assert body["status"] == "ok" and body["down"] == [] and body["degraded"] == []
            assert body["checks"]["database"]["ok"]
            assert body["checks"]["channel_layer"] == {"ok": True, "backend": "DatabaseChannelLayer"}
            assert body["checks"]["mqtt"] == {"ok": True, "state": "connected"}
            assert "no-cache" in httpx.get(base + "/healthz").headers["cache-control"]

            mosquitto.stop()
            body = health_once(base, 503, 40, full=True)
            assert body["down"] == ["mqtt"]
            assert body["checks"]["mqtt"] == {"ok": False, "state": "disconnected"}
            assert body["checks"]["database"]["ok"] and body["checks"]["channel_layer"]["ok"]
            # The load balancer's view: still serving, and saying what is wrong.
            code, body = health(base)
            assert code == 200 and body["status"] == "degraded"
            assert body["down"] == [] and body["degraded"] == ["mqtt"]
            assert body["checks"]["mqtt"]["state"] == "disconnected"
            link = ("homehub_mqtt_broker_connected", (("worker", "homehub-worker"),))
            assert scrape(base)[link] == 0  # and /metrics reports the outage

            mosquitto.start()
            health_once(base, 200, 60, full=True)


def test_no_worker_running_is_down_for_the_full_check_unless_mqtt_is_not_checked(live_env):
    with hub(live_env) as base:
        code, body = health(base)
        assert code == 200 and body["status"] == "degraded" and body["degraded"] == ["mqtt"]
        code, body = health(base, full=True)
        assert code == 503 and body["down"] == ["mqtt"]
        assert body["checks"]["mqtt"]["state"] == "no worker"
    with hub(live_env, HEALTHZ_CHECK_MQTT="0") as base:
        code, body = health(base, full=True)
        assert code == 200 and set(body["checks"]) == {"database", "channel_layer"}


def test_database_and_redis_down_are_named_without_secrets(live_env):
    closed = free_port()  # nothing listens there
    password = "s3cret-in-the-url"
    env = {
        **live_env,
        "DATABASE_URL": f"postgres://homehub:{password}@127.0.0.1:{closed}/homehub",
        "REDIS_URL": f"redis://:{password}@127.0.0.1:{closed}/0",
    }
    with hub(env) as base:
        for _ in range(2):  # the probe fails cleanly and the process keeps serving
            response = httpx.get(base + "/healthz", timeout=20)
            assert response.status_code == 503
            body = response.json()
            assert body["status"] == "down"
            assert body["down"] == ["database", "channel_layer"]
            assert body["degraded"] == ["mqtt"]  # the workers' reports are in the database
            assert body["checks"]["database"] == {"ok": False, "error": "OperationalError"}
            assert body["checks"]["channel_layer"]["ok"] is False
            assert password not in response.text and str(closed) not in response.text
        # /metrics still answers, and says that the database figures are missing.
        metrics = httpx.get(base + "/metrics", timeout=20)
        assert metrics.status_code == 200
        assert "homehub_metrics_database_ok 0.0" in metrics.text
        assert "homehub_devices_online" not in metrics.text


def test_redis_coming_back_heals_the_channel_layer_and_the_hub(live_env, tmp_path):
    """A hub started while Redis is down answers 503 naming the channel layer, and serves
    again (its device gateway starts) once Redis is up: no restart needed."""
    port = free_port()
    with hub({**live_env, "REDIS_URL": f"redis://127.0.0.1:{port}/0", "HEALTHZ_CHECK_MQTT": "0"}) as base:
        code, body = health(base)
        assert code == 503 and body["down"] == ["channel_layer"]
        assert httpx.get(base + "/.well-known/oauth-protected-resource").status_code == 500
        redis = subprocess.Popen(
            [
                shutil.which("redis-server") or "redis-server",
                "--port",
                str(port),
                "--save",
                "",
                "--dir",
                str(tmp_path),
            ],
            stdout=subprocess.DEVNULL,
        )
        try:
            body = health_once(base, 200)
            assert body["checks"]["channel_layer"] == {"ok": True, "backend": "RedisPubSubChannelLayer"}
            assert httpx.get(base + "/.well-known/oauth-protected-resource").status_code == 200
        finally:
            redis.terminate()
            redis.wait(10)
