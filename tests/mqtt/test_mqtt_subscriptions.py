"""A refused subscription is an outage: the worker checks every SUBACK and proves delivery with
probes, and a subscription refused by the broker (Mosquitto's dynamic-security plugin says so
in the SUBACK) or silently starved (Mosquitto's ACL file grants the SUBACK, then drops what it
denies: here, the broker user the ACL does not know) is logged with its topic and reason and
reported by `/healthz?full=1`, `/metrics` and `manage.py mqtt_health`."""

import glob
import json
import subprocess
import sys

import pytest

from devices.mqtt.models import MqttWorker
from devices.telemetry.models import TelemetryReading
from tests.devices_support import hub
from tests.homehub.test_healthz import health
from tests.homehub.test_metrics import scrape
from tests.mqtt_support import ROOT, broker, client, publish_all, readings, wait_until, worker, worker_env

pytestmark = pytest.mark.live
# Debian's mosquitto package ships the plugin in the architecture's library folder.
DYNSEC = next(iter(glob.glob("/usr/lib/*/mosquitto_dynamic_security.so")), "mosquitto_dynamic_security.so")


def states(client_id: str) -> dict[str, dict]:
    row = MqttWorker.objects.filter(client_id=client_id, connected=True).first()
    return {s["topic"]: s for s in row.subscriptions} if row else {}


def mqtt_health(env: dict[str, str], *args: str) -> tuple[int, dict]:
    done = subprocess.run(
        [sys.executable, "manage.py", "mqtt_health", *args], cwd=ROOT, env=env, capture_output=True, text=True
    )
    return done.returncode, json.loads(done.stdout)


def test_a_broker_user_the_acl_does_not_know_is_an_outage_not_silence(live_env, staff_client, tmp_path):
    users = {"homehub-worker": "right", "homehub": "wrong-user"}
    with broker(tmp_path / "broker", secure=True, users=users) as b:
        env = worker_env(
            live_env,
            b.url,
            MQTT_USERNAME="homehub",
            MQTT_PASSWORD="wrong-user",
            MQTT_PROBE_TIMEOUT_SECONDS="2",
        )
        with hub(env) as base, worker(env, tmp_path / "w.log", "--client-id", "w") as proc:
            silent = wait_until(
                lambda: (s := states("w")) and s["office/#"]["state"] == "silent" and s, what="silence found"
            )
            publish_all(client(b.url, username="homehub-worker", password="right"), readings(3))
            code, body = health(base, full=True)
            serving, degraded = health(base)
            figures = scrape(base)
            probe_code, probe = mqtt_health(env, "--client-id", "w")
            page = staff_client.get("/devices/").content.decode()
        log = proc.output()
    assert TelemetryReading.objects.count() == 0  # what the issue met: connected, and nothing arrives
    assert (
        "the probe published on office/_homehub/probe/w/delivery did not come back"
        in silent["office/#"]["reason"]
    )
    assert "user 'homehub'" in silent["office/#"]["reason"]
    assert {s["state"] for s in silent.values()} == {"silent"}  # its rights are the agents' patterns
    assert "subscription office/# is silent: nothing arrives" in log
    assert code == 503 and body["down"] == ["mqtt"]
    assert {"worker": "w", "topic": "office/#", "state": "silent"} in body["checks"]["mqtt"]["subscriptions"]
    assert "wrong-user" not in json.dumps(body)
    assert serving == 200 and degraded["degraded"] == ["mqtt"]
    assert figures[("homehub_mqtt_subscription_ok", (("topic", "office/#"), ("worker", "w")))] == 0
    assert figures[("homehub_mqtt_broker_connected", (("worker", "w"),))] == 1  # linked, and useless
    assert probe_code == 1 and probe["ok"] is False and probe["state"] == "connected"
    assert "Subscription <code>office/#</code> of <code>w</code> is silent: nothing arrives" in page


def test_a_subscription_refused_in_the_suback_is_reported_with_its_reason(live_env, tmp_path):
    rules = {
        "defaultACLAccess": {
            "publishClientSend": True,
            "publishClientReceive": True,
            "subscribe": True,
            "unsubscribe": True,
        },
        "clients": [],
        "groups": [{"groupname": "anyone", "roles": [{"rolename": "no-telemetry"}]}],
        "anonymousGroup": "anyone",
        "roles": [
            {
                "rolename": "no-telemetry",
                "acls": [{"acltype": "subscribePattern", "topic": "office/#", "allow": False}],
            }
        ],
    }
    (tmp_path / "dynsec.json").write_text(json.dumps(rules))
    extra = (f"plugin {DYNSEC}", f"plugin_opt_config_file {tmp_path / 'dynsec.json'}")
    with broker(tmp_path / "broker", extra=extra) as b:
        env = worker_env(live_env, b.url)
        with hub(env) as base, worker(env, tmp_path / "w.log", "--client-id", "w") as proc:
            found = wait_until(
                lambda: (s := states("w")) and "pending" not in {x["state"] for x in s.values()} and s,
                what="every subscription known",
            )
            figures = scrape(base)
            code, body = health(base, full=True)
            probe_code, _ = mqtt_health(env)
        log = proc.output()
    assert found["office/#"]["state"] == "refused"
    assert found["office/#"]["reason"] == "the broker refused it: Not authorized (0x87)"
    assert {s["state"] for t, s in found.items() if t != "office/#"} == {"ok"}
    assert "subscription office/# is refused: the broker refused it: Not authorized (0x87)" in log
    assert figures[("homehub_mqtt_subscription_ok", (("topic", "office/#"), ("worker", "w")))] == 0
    assert figures[("homehub_mqtt_subscription_ok", (("topic", "mcp/discovery"), ("worker", "w")))] == 1
    assert code == 503 and body["checks"]["mqtt"]["subscriptions"] == [
        {"worker": "w", "topic": "office/#", "state": "refused"}
    ]
    assert probe_code == 1
