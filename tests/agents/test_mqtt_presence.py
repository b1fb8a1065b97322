"""Presence that follows reality for MQTT (SOMS) agents: a board that dies without a last will
and declared no heartbeat goes offline by itself, a call to it fails within seconds saying
why, an idle board that is alive stays online; and a broker restart writes no spurious
discovery failures (a real one still does)."""

import json
import time

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.enums import CallbackAPIVersion

from audit.models import Event
from devices.agents.models import Agent, AgentTool
from devices.soms.link import HEARD_RECENTLY_SECONDS
from devices.soms.simulator import SimulatedMqttAgent
from tests.agents.test_devices_gateway import http_call
from tests.agents.test_mqtt_agents import text_of
from tests.devices_support import hub
from tests.mqtt_support import approve_mqtt_agents, broker, wait_until

pytestmark = pytest.mark.live


def online(agent_id: str) -> bool:
    return Agent.objects.filter(agent_id=agent_id, online=True).exists()


def discovered(*agent_ids: str) -> bool:
    return all(AgentTool.objects.filter(agent__agent_id=a, available=True).count() == 2 for a in agent_ids)


def test_a_board_dead_without_a_last_will_goes_offline_by_itself(live_env, tmp_path):
    settings = {"MQTT_AGENT_SILENCE_SECONDS": "2", "MQTT_AGENT_PROBE_SECONDS": "1"}
    with broker(tmp_path / "broker") as b, hub(live_env, serve=True, MQTT_URL=b.url, **settings):
        approve_mqtt_agents("esp32_idle", "esp32_dying")
        idle = SimulatedMqttAgent("127.0.0.1", b.port, "esp32_idle", last_will=False)
        dying = SimulatedMqttAgent("127.0.0.1", b.port, "esp32_dying", last_will=False)
        idle.start()
        dying.start()
        wait_until(lambda: discovered("esp32_idle", "esp32_dying"), what="discovery")
        dying.stop(gracefully=False)  # no goodbye, no will, no heartbeat: only silence
        wait_until(lambda: not online("esp32_dying"), timeout=15, what="the dead board offline")
        time.sleep(3)  # the idle one was silent as long, and answered its presence checks
        assert online("esp32_idle")
        idle.stop()
    assert Event.objects.filter(action="agent.disconnect", target="agent:esp32_dying").exists()
    assert not AgentTool.objects.filter(agent__agent_id="esp32_dying", available=True).exists()


def test_a_call_to_a_board_that_is_gone_fails_within_seconds_saying_why(live_env, make_token, tmp_path):
    token = make_token(name="llm")
    with broker(tmp_path / "broker") as b, hub(live_env, serve=True, MQTT_URL=b.url) as base:
        approve_mqtt_agents("esp32_idle", "esp32_gone")
        idle = SimulatedMqttAgent("127.0.0.1", b.port, "esp32_idle", last_will=False)
        gone = SimulatedMqttAgent("127.0.0.1", b.port, "esp32_gone", last_will=False)
        idle.start()
        gone.start()
        wait_until(lambda: discovered("esp32_idle", "esp32_gone"), what="discovery")
        gone.stop(gracefully=False)
        time.sleep(HEARD_RECENTLY_SECONDS + 1)  # both silent since; the default silence is a minute
        assert online("esp32_gone")
        started = time.monotonic()
        failed = http_call(base, token, "esp32_gone__set_led_color", {"r": 1, "g": 2, "b": 3})
        waited = time.monotonic() - started
        alive = http_call(base, token, "esp32_idle__set_led_color", {"r": 4, "g": 5, "b": 6})
        wait_until(lambda: not online("esp32_gone"), what="offline after the failed check")
        idle.stop()
    assert failed["isError"] and waited < 15  # not the 30 s call timeout
    assert "did not answer a presence check within 3 s, so the call was not sent" in text_of(failed)
    assert not alive.get("isError") and idle.state.led == (4, 5, 6)
    assert gone.state.calls == []


def test_a_broker_restart_writes_no_discovery_failures_and_a_real_failure_still_does(live_env, tmp_path):
    with broker(tmp_path / "broker") as b, hub(live_env, serve=True, MQTT_URL=b.url, MQTT_CLIENT_ID="hub"):
        approve_mqtt_agents("esp32_0", "esp32_1", "esp32_broken")
        agents = [SimulatedMqttAgent("127.0.0.1", b.port, f"esp32_{i}") for i in range(2)]
        for agent in agents:
            agent.start()
        wait_until(lambda: discovered("esp32_0", "esp32_1"), what="discovery")
        for _ in range(2):
            b.restart()
            wait_until(lambda: Event.objects.filter(action="agent.tools").count() >= 4, what="rediscovery")
        wait_until(lambda: discovered("esp32_0", "esp32_1"), what="every tool available again")
        reconnections = Event.objects.filter(action="agent.discovery_failed").count()

        # An agent that answers its tool listing with an error: a real discovery failure.
        broken = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="broken")
        broken.on_message = lambda c, u, m: c.publish(
            f"mcp/esp32_broken/response/{json.loads(m.payload)['id']}",
            json.dumps({"jsonrpc": "2.0", "id": json.loads(m.payload)["id"], "error": "busy"}),
            qos=1,
        )
        broken.connect("127.0.0.1", b.port)
        broken.loop_start()
        broken.subscribe("mcp/esp32_broken/request/+", 1)
        time.sleep(0.3)
        broken.publish("mcp/discovery", json.dumps({"agent_id": "esp32_broken"}), qos=1)
        failure = wait_until(
            lambda: Event.objects.filter(
                action="agent.discovery_failed", target="agent:esp32_broken"
            ).first(),
            what="the real failure audited",
        )
        broken.loop_stop()
        for agent in agents:
            agent.stop()
    assert reconnections == 0
    assert failure.after["reason"] == "busy"
