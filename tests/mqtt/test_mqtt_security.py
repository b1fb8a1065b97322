"""The shipped broker configuration (deploy/mosquitto): passwords, and an ACL by which each
agent may only publish its own telemetry, answers and status and read its own requests."""

import time

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.enums import CallbackAPIVersion

from devices.home.models import Light
from devices.mqtt.models import MqttWorker
from devices.telemetry.models import TelemetryReading
from tests.mqtt_support import Process, broker, client, publish_all, wait_until, worker_env

pytestmark = pytest.mark.live
USERS = {"homehub-worker": "hub-secret", "esp32_01": "agent-secret", "esp32_02": "other-secret"}


def test_agents_are_confined_to_their_own_topics(live_env, tmp_path):
    with broker(tmp_path / "broker", secure=True, users=USERS) as b:
        env = worker_env(
            live_env,
            b.url,
            MQTT_USERNAME="homehub-worker",
            MQTT_PASSWORD="hub-secret",
            MQTT_SHARED_GROUP="hub",
        )
        proc = Process(["mqtt_worker", "--client-id", "secure"], env, tmp_path / "w.log")
        try:
            wait_until(lambda: MqttWorker.objects.filter(client_id="secure", connected=True).exists())
            # The shipped ACL gives the worker every subscription, and its probes come back.
            states = wait_until(
                lambda: (
                    {s["state"] for s in MqttWorker.objects.get(client_id="secure").subscriptions} == {"ok"}
                ),
                what="every subscription delivering",
            )
            assert states
            agent = client(b.url, client_id="esp32_01", username="esp32_01", password="agent-secret")
            requests = []
            agent.on_message = lambda c, u, m: requests.append(m.topic)
            agent.subscribe("mcp/esp32_02/request/+", 1)  # someone else's requests: denied
            publish_all(
                agent,
                [
                    ("office/lab/sensor/esp32_02/temperature", {"value": 99}),  # another device: dropped
                    ("homehub/lights/salon/set", "on"),  # a command: not for agents
                    ("office/lab/sensor/esp32_01/temperature", {"value": 21}),  # its own: stored
                ],
            )
            wait_until(lambda: TelemetryReading.objects.exists(), what="its own reading")
            other = client(b.url, client_id="esp32_02", username="esp32_02", password="other-secret")
            publish_all(other, [("mcp/esp32_02/request/call_tool", "{}")])
            time.sleep(1)
            agent.loop_stop()
            other.loop_stop()
        finally:
            proc.stop()
        assert "connected to" in proc.output()
    assert list(TelemetryReading.objects.values_list("device_id", "value")) == [("esp32_01", 21.0)]
    assert Light.objects.get(name="salon").on is False
    assert requests == []


def test_a_wrong_password_is_refused(tmp_path):
    with broker(tmp_path / "broker", secure=True, users=USERS) as b:
        refused = []
        c = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="intruder")
        c.username_pw_set("esp32_01", "guess")
        c.on_connect = lambda cl, u, f, reason, p: refused.append(reason.is_failure)
        c.connect("127.0.0.1", b.port)
        c.loop_start()
        wait_until(lambda: refused, what="an answer")
        c.loop_stop()
    assert refused == [True]


def test_disarming_over_mqtt_needs_the_configured_code(live_env, tmp_path):
    """On an anonymous broker (the demo's), anyone may publish `homehub/alarm/set`: arming works,
    disarming needs MQTT_DISARM_CODE in the command, and with none configured it is off."""
    from audit.models import Event
    from devices.home.models import Alarm
    from devices.telemetry.models import RejectedMessage

    def armed() -> bool:
        return Alarm.objects.get().armed

    def refusals() -> list[tuple[str, str]]:
        rows = RejectedMessage.objects.filter(topic="homehub/alarm/set").order_by("id")
        return [(row.payload, row.reason) for row in rows]

    with broker(tmp_path / "broker") as b:
        pub = client(b.url)
        env = worker_env(live_env, b.url)
        with_code = {**env, "MQTT_DISARM_CODE": "correct horse battery staple"}
        for run, worker_settings in enumerate((env, with_code)):
            proc = Process(
                ["mqtt_worker", "--client-id", f"alarm{run}"], worker_settings, tmp_path / f"{run}.log"
            )
            try:
                wait_until(
                    lambda run=run: MqttWorker.objects.filter(
                        client_id=f"alarm{run}", connected=True
                    ).exists()
                )
                time.sleep(0.5)  # its subscriptions made
                publish_all(pub, [("homehub/alarm/set", "arm")])
                wait_until(armed, what="armed over MQTT")
                publish_all(
                    pub,
                    [
                        ("homehub/alarm/set", "disarm"),
                        ("homehub/alarm/set", '{"armed": false}'),
                        ("homehub/alarm/set", '{"armed": false, "code": "correct horse"}'),
                    ],
                )
                wait_until(lambda run=run: len(refusals()) == 3 * (run + 1), what="the disarms refused")
                assert armed()
            finally:
                proc.stop()
        # The right code, to the worker that has it.
        proc = Process(["mqtt_worker", "--client-id", "alarm1"], with_code, tmp_path / "2.log")
        try:
            wait_until(lambda: MqttWorker.objects.filter(client_id="alarm1", connected=True).exists())
            time.sleep(0.5)
            publish_all(
                pub, [("homehub/alarm/set", '{"armed": false, "code": "correct horse battery staple"}')]
            )
            wait_until(lambda: not armed(), what="disarmed with the code")
        finally:
            proc.stop()
        pub.loop_stop()

    reasons = [reason for _, reason in refusals()]
    assert all(r.startswith("disarming over MQTT is off: set MQTT_DISARM_CODE") for r in reasons[:3])
    assert all(r == 'disarm refused: the command must carry the right "code"' for r in reasons[3:])
    assert "correct horse" not in "".join(payload for payload, _ in refusals())  # codes never kept
    changes = Event.objects.filter(action="alarm.set", interface="mqtt").order_by("id")
    assert [e.after["armed"] for e in changes] == [True, True, False]  # armed twice, disarmed once
