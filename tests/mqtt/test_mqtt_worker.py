"""The MQTT worker against a real Mosquitto on a free port: telemetry lands once and only once,
through worker restarts, broker restarts and shared subscriptions."""

import json
import threading
import time

import pytest

from devices.mqtt.models import MqttWorker
from devices.telemetry.models import RejectedMessage, Sensor, TelemetryReading
from tests.mqtt_support import broker, client, publish_all, readings, wait_until, worker, worker_env

pytestmark = pytest.mark.live


def counted(client_ids, key="stored"):
    rows = MqttWorker.objects.filter(client_id__in=client_ids).values_list("counters", flat=True)
    return sum(c.get(key, 0) for c in rows)


def test_telemetry_lands_with_the_right_fields_and_bad_messages_are_kept(live_env, tmp_path):
    with (
        broker(tmp_path / "broker") as b,
        worker(worker_env(live_env, b.url), tmp_path / "w.log", "--client-id", "w1"),
    ):
        wait_until(
            lambda: MqttWorker.objects.filter(client_id="w1", connected=True).exists(), what="worker up"
        )
        pub = client(b.url)
        publish_all(
            pub,
            [
                (
                    "office/meeting_room_a/sensor/env_01/temperature",
                    {"value": 24.5, "unit": "c", "timestamp": 1715840000},
                ),
                (
                    "office/meeting_room_a/sensor/env_01/co2",
                    {"value": 0, "unit": "ppm", "timestamp": 1715840000123},
                ),
                ("office/meeting_room_a/sensor/env_01/humidity", "41.5"),
                ("office/meeting_room_a/sensor/env_01/noise", {"value": 33}),
                ("office/meeting_room_a/sensor/env_01/heartbeat", "1"),
                ("office/meeting_room_a/sensor/env_01/temperature", "{oops"),
                ("office/meeting_room_a/sensor/env_01", {"value": 1}),
                ("office/meeting_room_a/sensor/env_01/pressure", {"unit": "hPa"}),
            ],
        )
        wait_until(lambda: RejectedMessage.objects.count() == 3, what="three rejections")
        rows = {
            r.channel: r
            for r in wait_until(
                lambda: (
                    list(TelemetryReading.objects.all()) if TelemetryReading.objects.count() == 4 else None
                )
            )
        }
        pub.loop_stop()
    assert set(rows) == {"temperature", "co2", "humidity", "noise"}  # no heartbeat reading
    t = rows["temperature"]
    assert (t.zone, t.device_type, t.device_id, t.value, t.unit) == (
        "meeting_room_a",
        "sensor",
        "env_01",
        24.5,
        "c",
    )
    assert t.measured_at.timestamp() == 1715840000
    assert rows["co2"].value == 0 and rows["co2"].measured_at.timestamp() == pytest.approx(1715840000.123)
    assert rows["humidity"].value == 41.5
    assert abs(rows["noise"].measured_at.timestamp() - time.time()) < 60  # no timestamp: time of receipt
    reasons = dict(RejectedMessage.objects.values_list("topic", "reason"))
    assert reasons["office/meeting_room_a/sensor/env_01/temperature"] == "payload is not JSON"
    assert reasons["office/meeting_room_a/sensor/env_01"].startswith("topic is not office/")
    assert reasons["office/meeting_room_a/sensor/env_01/pressure"] == "payload has no 'value'"
    assert RejectedMessage.objects.get(reason="payload is not JSON").payload == "{oops"
    latest = {s.channel: s.value for s in Sensor.objects.all()}
    assert latest == {"temperature": 24.5, "co2": 0, "humidity": 41.5, "noise": 33}


@pytest.mark.parametrize("protocol", ["5", "3.1.1"])
def test_readings_published_while_the_worker_is_down_all_arrive_once(live_env, tmp_path, protocol):
    env = worker_env(live_env, "", MQTT_PROTOCOL=protocol)
    with broker(tmp_path / "broker") as b:
        env["MQTT_URL"] = b.url
        with worker(env, tmp_path / "w1.log", "--client-id", "durable"):
            wait_until(lambda: MqttWorker.objects.filter(client_id="durable", connected=True).exists())
        # The worker is gone; its persistent session keeps what is published meanwhile.
        pub = client(b.url)
        publish_all(pub, readings(1000))
        pub.loop_stop()
        assert TelemetryReading.objects.count() == 0
        with worker(env, tmp_path / "w2.log", "--client-id", "durable"):
            wait_until(lambda: TelemetryReading.objects.count() >= 1000, timeout=60, what="1,000 readings")
            wait_until(lambda: counted(["durable"]) >= 1000, timeout=15)
            time.sleep(1)
            assert TelemetryReading.objects.count() == 1000
            assert counted(["durable"]) == 1000  # each handled once, not deduplicated


def test_a_broker_restart_mid_stream_loses_nothing_published_at_qos_1(live_env, tmp_path):
    with (
        broker(tmp_path / "broker") as b,
        worker(worker_env(live_env, b.url), tmp_path / "w.log", "--client-id", "w"),
    ):
        wait_until(lambda: MqttWorker.objects.filter(client_id="w", connected=True).exists())
        pub = client(b.url, client_id="publisher")
        stream = readings(3000)

        def publish():
            for i, (topic, payload) in enumerate(stream):
                pub.publish(topic, json.dumps(payload), qos=1)
                if i % 100 == 0:
                    time.sleep(0.02)

        publisher = threading.Thread(target=publish)
        publisher.start()
        wait_until(lambda: TelemetryReading.objects.count() > 300, what="the stream flowing")
        b.restart()
        publisher.join()
        # A reading published while the broker was down reports "not connected", yet paho
        # keeps it (QoS 1) and sends it after reconnecting: the count is the proof.
        wait_until(lambda: TelemetryReading.objects.count() >= 3000, timeout=90, what="3,000 readings")
        pub.loop_stop()
        wait_until(lambda: MqttWorker.objects.filter(client_id="w", connected=True).exists())
    assert TelemetryReading.objects.count() == 3000


def test_a_broker_that_lost_the_workers_session_is_reported_and_ingestion_resumes(live_env, tmp_path):
    with (
        broker(tmp_path / "broker") as b,
        worker(worker_env(live_env, b.url), tmp_path / "w.log", "--client-id", "w") as proc,
    ):
        wait_until(lambda: MqttWorker.objects.filter(client_id="w", connected=True).exists())
        pub = client(b.url)
        publish_all(pub, readings(10, start=time.time() - 100))
        wait_until(lambda: TelemetryReading.objects.count() == 10, what="the first readings")
        b.stop()
        (tmp_path / "broker" / "mosquitto.db").unlink()  # as if it had crashed before saving
        b.start()
        wait_until(lambda: "lost this worker's session" in proc.output(), what="the warning")
        # The worker subscribes, then publishes its retained birth message (which the broker
        # forgot with everything else): once it is back, the subscriptions are in place.
        births = []
        watcher = client(b.url)
        watcher.on_message = lambda c, u, m: births.append(m.payload)
        watcher.subscribe("homehub/status", qos=1)
        wait_until(lambda: b"online" in births, what="the worker's birth message")
        watcher.loop_stop()
        wait_until(lambda: pub.is_connected(), what="the publisher back")
        publish_all(pub, readings(10, start=time.time() - 50))
        pub.loop_stop()
        wait_until(lambda: TelemetryReading.objects.count() == 20, what="readings after the reconnect")
    assert proc.output().count("lost this worker's session") == 1  # not at the first connection


def test_two_workers_with_a_shared_subscription_split_the_load(live_env, tmp_path):
    env = worker_env(live_env, "", MQTT_SHARED_GROUP="hub")
    with broker(tmp_path / "broker") as b:
        env["MQTT_URL"] = b.url
        with (
            worker(env, tmp_path / "a.log", "--client-id", "a"),
            worker(env, tmp_path / "b.log", "--client-id", "b"),
        ):
            wait_until(lambda: MqttWorker.objects.filter(connected=True).count() == 2, what="two workers")
            pub = client(b.url, inflight=1000)
            publish_all(pub, readings(10_000))
            pub.loop_stop()
            wait_until(lambda: TelemetryReading.objects.count() >= 10_000, timeout=90, what="10,000 readings")
            wait_until(lambda: counted(["a", "b"]) >= 10_000, timeout=15)
            time.sleep(1)
            each = dict(MqttWorker.objects.values_list("client_id", "counters"))
    assert TelemetryReading.objects.count() == 10_000
    assert each["a"]["stored"] + each["b"]["stored"] == 10_000  # none handled twice
    assert each["a"]["stored"] > 1000 and each["b"]["stored"] > 1000  # both took a share


def test_the_worker_keeps_retrying_a_broker_that_is_not_there(live_env, tmp_path):
    from tests.conftest import free_port

    port = free_port()
    env = worker_env(live_env, f"mqtt://127.0.0.1:{port}")
    with worker(env, tmp_path / "w.log", "--client-id", "patient") as proc:
        row = wait_until(lambda: MqttWorker.objects.filter(client_id="patient").first(), what="a report")
        assert row.connected is False
        assert proc.proc.poll() is None  # still running, retrying
        from devices.mqtt import status

        assert status.broker_state() == "disconnected"
