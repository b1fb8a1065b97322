"""Failover and exactly-once storage with real workers and a real Mosquitto: a worker of two
stopped under traffic (its share stored by the other within seconds, its return taking the
share back), and workers killed between committing a batch and acknowledging it (the
broker's redeliveries recognised by their session and packet id, with or without a
timestamp in the reading, while distinct readings with equal contents all stay)."""

import json
import signal
import threading
import time

import pytest

from devices.mqtt.models import MqttWorker
from devices.telemetry.models import TelemetryReading
from tests.mqtt.test_mqtt_subscriptions import mqtt_health
from tests.mqtt.test_mqtt_worker import counted
from tests.mqtt_support import Process, Relay, broker, client, publish_all, wait_until, worker_env

pytestmark = [pytest.mark.live, pytest.mark.timeout(180)]


def connected(*client_ids: str) -> bool:
    return MqttWorker.objects.filter(client_id__in=client_ids, connected=True).count() == len(client_ids)


def mixed_readings(count: int, device: str) -> list[tuple[str, object]]:
    """Readings with a timestamp, readings without one (equal bare values: distinct readings
    all the same), and pairs that share a timestamp and a value (also distinct)."""
    start = time.time() - 600
    timed = [
        (f"office/lab/sensor/{device}/temperature", {"value": i, "unit": "c", "timestamp": start + i})
        for i in range(count)
    ]
    bare = [(f"office/lab/sensor/{device}/people", "1") for _ in range(count // 10)]
    twins = [(f"office/lab/sensor/{device}/door", {"value": 1, "timestamp": start}) for _ in range(2)]
    return timed + bare + twins


def assert_each_once(device: str, count: int) -> None:
    rows = TelemetryReading.objects.filter(device_id=device)
    timed = list(rows.filter(channel="temperature").values_list("value", flat=True))
    assert sorted(timed) == list(range(count))  # every reading, none twice
    assert rows.filter(channel="people").count() == count // 10
    assert rows.filter(channel="door").count() == 2


@pytest.mark.parametrize("protocol", ["5", "3.1.1"])
def test_a_worker_killed_between_storing_and_acknowledging_stores_each_reading_once(
    live_env, tmp_path, protocol
):
    env = worker_env(live_env, "", MQTT_PROTOCOL=protocol)
    messages = mixed_readings(300, "crash_env")
    with broker(tmp_path / "broker") as b:
        relay = Relay(b.port)
        first = Process(
            ["mqtt_worker", "--client-id", "w"], {**env, "MQTT_URL": relay.url}, tmp_path / "1.log"
        )
        try:
            wait_until(lambda: connected("w"), what="the worker up")
            relay.hold()  # its acknowledgements never reach the broker from here on
            publish_all(client(b.url), messages)
            wait_until(lambda: TelemetryReading.objects.count() == len(messages), what="every message stored")
        finally:
            first.stop(signal.SIGKILL)
            relay.close()
        second = Process(["mqtt_worker", "--client-id", "w"], {**env, "MQTT_URL": b.url}, tmp_path / "2.log")
        try:
            # The broker sends every unacknowledged message again, to the same session.
            wait_until(lambda: counted(["w"], "repeats") == len(messages), what="the redeliveries recognised")
        finally:
            second.stop()
    assert TelemetryReading.objects.count() == len(messages)
    assert_each_once("crash_env", 300)
    assert counted(["w"], "stored") == 0


@pytest.mark.parametrize("protocol", ["5", "3.1.1"])
def test_a_worker_killed_before_acknowledging_is_taken_over_by_the_other(live_env, tmp_path, protocol):
    """Worker b dies holding unacknowledged messages it had stored: worker a opens b's session,
    recognises those redeliveries, and stores b's share of what follows."""
    env = worker_env(live_env, "", MQTT_SHARED_GROUP="hub", MQTT_PROTOCOL=protocol)
    before = mixed_readings(300, "before_env")
    with broker(tmp_path / "broker") as br:
        relay = Relay(br.port)
        a = Process(["mqtt_worker", "--client-id", "a"], {**env, "MQTT_URL": br.url}, tmp_path / "a.log")
        b = Process(["mqtt_worker", "--client-id", "b"], {**env, "MQTT_URL": relay.url}, tmp_path / "b.log")
        try:
            wait_until(lambda: connected("a", "b"), what="two workers")
            relay.hold()
            publisher = client(br.url)
            publish_all(publisher, before)
            wait_until(lambda: TelemetryReading.objects.count() == len(before), what="both shares stored")
            b.stop(signal.SIGKILL)
            relay.close()
            wait_until(lambda: "took over the session of stopped worker b" in a.output(), what="the takeover")
            after = mixed_readings(300, "after_env")
            publish_all(publisher, after)
            total = len(before) + len(after)
            wait_until(lambda: TelemetryReading.objects.count() >= total, what="b's share stored by a")
            wait_until(lambda: counted(["a"], "repeats") > 0, what="a's report")
            assert MqttWorker.objects.get(client_id="a").adopted == ["b"]
            time.sleep(1)
        finally:
            a.stop()
            b.stop()
    assert TelemetryReading.objects.count() == total
    assert_each_once("before_env", 300)
    assert_each_once("after_env", 300)


def test_one_worker_of_two_stopped_under_traffic_and_back(live_env, tmp_path):
    env = worker_env(live_env, "", MQTT_SHARED_GROUP="hub")
    published: list[float] = []  # when reading i was acknowledged by the broker
    stop = threading.Event()

    def publish(url: str) -> None:
        pub = client(url, client_id="sensors")
        start = time.time() - 3600
        while not stop.is_set():
            i = len(published)
            payload = {"value": i, "unit": "c", "timestamp": start + i * 0.001}
            pub.publish("office/lab/sensor/flow/temperature", json.dumps(payload), qos=1).wait_for_publish(10)
            published.append(time.time())
            time.sleep(0.005)
        pub.loop_stop()

    with broker(tmp_path / "broker") as br:
        env["MQTT_URL"] = br.url
        a = Process(["mqtt_worker", "--client-id", "a"], env, tmp_path / "a.log")
        b = Process(["mqtt_worker", "--client-id", "b"], env, tmp_path / "b.log")
        publisher = threading.Thread(target=publish, args=(br.url,))
        try:
            wait_until(lambda: connected("a", "b"), what="two workers")
            publisher.start()
            time.sleep(2)
            b.stop()  # SIGTERM: a clean stop, under traffic
            stopped = len(published)
            time.sleep(3)
            # b is away: everything published until now is stored (by a) before b returns.
            down = len(published)
            wait_until(
                lambda: TelemetryReading.objects.filter(value__lt=down).count() == down,
                what="the readings published while b was stopped",
            )
            b = Process(["mqtt_worker", "--client-id", "b"], env, tmp_path / "b2.log")
            wait_until(lambda: "took over" not in b.output() and connected("a", "b"), what="b back")
            wait_until(lambda: counted(["b"]) > 0, timeout=30, what="b storing its share again")
            time.sleep(1)
        finally:
            stop.set()
            publisher.join(15)
        total = len(published)
        wait_until(lambda: TelemetryReading.objects.count() >= total, what="every reading")
        time.sleep(1)
        a.stop()
        b.stop()
    values = list(TelemetryReading.objects.values_list("value", flat=True))
    assert len(values) == total and len(set(values)) == total  # none lost, none twice
    assert 0 < stopped < down < total
    assert MqttWorker.objects.get(client_id="b").counters["stored"] > 0  # its share, taken back


def test_mqtt_health_reports_a_killed_worker_once_the_broker_announced_it_gone(live_env, tmp_path):
    """The probe reads the takeover, as /healthz?full=1 does: a killed worker is unhealthy within
    seconds (its last will, the other worker adopting its session), not after a minute of silence."""
    env = worker_env(live_env, "", MQTT_SHARED_GROUP="hub")
    with broker(tmp_path / "broker") as br:
        env["MQTT_URL"] = br.url
        a = Process(["mqtt_worker", "--client-id", "a"], env, tmp_path / "a.log")
        b = Process(["mqtt_worker", "--client-id", "b"], env, tmp_path / "b.log")
        try:
            wait_until(lambda: connected("a", "b"), what="two workers")
            assert mqtt_health(env, "--client-id", "b")[0] == 0
            b.stop(signal.SIGKILL)
            killed = time.monotonic()
            _, found = wait_until(
                lambda: (probe := mqtt_health(env, "--client-id", "b"))[0] == 1 and probe,
                timeout=30,
                every=0.5,
                what="the probe to report b gone",
            )
            noticed = time.monotonic() - killed
            survivor = mqtt_health(env, "--client-id", "a")
        finally:
            a.stop()
            b.stop()
    assert noticed < 15  # its last report is still fresh: the broker's word is what counts
    assert found == {"ok": False, "state": "no worker", "adopted_by": "a"}
    assert survivor == (0, {"ok": True, "state": "connected", "adopted": {"a": ["b"]}})
