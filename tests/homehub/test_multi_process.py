"""The hub as deployed past one machine (issue 6): two daphne processes and two MQTT workers
over PostgreSQL, the Redis channel layer and a broker, with an ESP32 on one process, an MQTT
agent behind the workers, and an LLM agent that opened its MCP session on one process and
works through the other, while telemetry streams in through both workers."""

import contextlib
import json
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection

from audit.models import Event
from devices.agents.services import register_agent
from devices.mqtt.models import MqttWorker
from devices.soms.simulator import SimulatedMqttAgent
from devices.telemetry.models import TelemetryReading
from tests.agents.test_devices_gateway import http_call, http_request
from tests.devices_support import device_url
from tests.hub_support import running_hub
from tests.mcp_endpoint.test_mcp_http import INIT, post, result_of
from tests.mcp_helpers import call
from tests.mqtt.test_mqtt_worker import counted
from tests.mqtt_support import (
    Process,
    approve_mqtt_agents,
    broker,
    client,
    publish_all,
    readings,
    wait_until,
    worker,
    worker_env,
)

pytestmark = [pytest.mark.live, pytest.mark.timeout(180)]
MAC = "aa:bb:cc:00:00:4d"
VOLUME = "aa_bb_cc_00_00_4d__self_audio_speaker_set_volume"
LED = "esp32_multi__set_led_color"
READINGS = 3000
CALLS = 12  # of each kind


@pytest.fixture
def postgres_only(live_env):
    if connection.vendor != "postgresql":
        pytest.skip("the multi-process test runs on PostgreSQL (make test's second pass, DATABASE_URL)")
    return live_env


def test_two_hubs_two_workers_one_home(postgres_only, redis_url, make_token, tmp_path):
    token = make_token(name="llm-far")
    with broker(tmp_path / "broker") as b:
        env = worker_env(postgres_only, b.url, REDIS_URL=redis_url, MCP_RATE_LIMIT="0")
        workers = [
            worker(env, tmp_path / f"{name}.log", "--client-id", name, "--shared-group", "hub")
            for name in ("w1", "w2")
        ]
        with (
            running_hub(env) as near,
            running_hub(env) as far,
            workers[0] as w1,
            workers[1] as w2,
            contextlib.ExitStack() as cleanup,
        ):
            wait_until(lambda: MqttWorker.objects.filter(connected=True).count() == 2, what="two workers")
            _, device_token = register_agent(
                MAC, transport="ws", actor="test", interface=Event.Interface.SYSTEM
            )
            device = Process(
                ["simulate_device", MAC, device_token, "--url", device_url(near.base)],
                env,
                tmp_path / "device.log",
            )
            cleanup.callback(device.stop)
            approve_mqtt_agents("esp32_multi")
            agent = SimulatedMqttAgent("127.0.0.1", b.port, "esp32_multi")
            agent.start()
            cleanup.callback(agent.stop)

            def offered() -> set[str]:
                return {t["name"] for t in http_request(far.base, token, "tools/list")["tools"]}

            # Two agents start, announce their tools and reach the far process through Redis:
            # seconds on a loaded machine, so more room than the usual 20 s.
            wait_until(
                lambda: {VOLUME, LED} <= offered(), timeout=45, what="both agents' tools on the far process"
            )

            # A session opened on one process, used on both, while telemetry flows.
            session = post(near.base, INIT, token).headers["mcp-session-id"]
            publisher = client(b.url, inflight=500)

            def one_call(i: int) -> dict:
                base = (far if i % 3 else near).base
                name, args = (VOLUME, {"volume": i}) if i % 2 else (LED, {"r": i, "g": 0, "b": 0})
                return result_of(post(base, call(name, args, id=i + 10), token, session))

            with ThreadPoolExecutor(4) as pool:
                answers = pool.map(one_call, range(2 * CALLS))
                publish_all(publisher, readings(READINGS, device="multi_env"))
                answers = list(answers)
            publisher.loop_stop()

            wait_until(lambda: TelemetryReading.objects.count() >= READINGS, timeout=60, what="every reading")
            wait_until(lambda: counted(["w1", "w2"]) >= READINGS, timeout=15, what="the workers' reports")
            stored = dict(MqttWorker.objects.values_list("client_id", "counters"))

            status = http_call(far.base, token, "aa_bb_cc_00_00_4d__self_get_device_status", {})

            # The process that opened the session dies hard and comes back: the session lives on.
            near.restart(kill=True)
            after_restart = post(near.base, call("get_alarm_status", {}), token, session)

            exits = [device.stop(), w1.stop(), w2.stop(), near.stop(), far.stop()]

    assert len(answers) == 2 * CALLS and not [a for a in answers if a.get("isError")]
    assert len(agent.state.calls) == CALLS  # every MQTT call reached the agent once
    assert agent.state.led[0] in range(0, 2 * CALLS, 2)
    volume = json.loads(status["content"][0]["text"])["audio_speaker"]["volume"]
    assert volume in range(1, 2 * CALLS, 2)  # the device took the calls
    assert TelemetryReading.objects.filter(device_id="multi_env").count() == READINGS
    assert stored["w1"]["stored"] + stored["w2"]["stored"] == READINGS  # none stored twice
    assert stored["w1"]["stored"] > 0 and stored["w2"]["stored"] > 0  # both took a share
    assert after_restart.status_code == 200 and result_of(after_restart)["isError"] is False
    assert exits == [0, 0, 0, 0, 0]  # every process stopped cleanly
