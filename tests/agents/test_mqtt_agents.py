"""MCP over MQTT (seed 004): SOMS-style agents discovered, listed and called by an LLM over /mcp,
with the hub run the README's way (`manage.py serve`, worker in-process) and split over Redis."""

import json
import time

import pytest

from audit.models import Event
from devices.agents.models import Agent, AgentTool
from devices.home.models import Light
from devices.soms.simulator import SimulatedMqttAgent
from devices.telemetry.models import RejectedMessage
from tests.agents.test_devices_gateway import http_call, http_request
from tests.devices_support import hub
from tests.mqtt_support import (
    Process,
    approve_mqtt_agents,
    broker,
    client,
    publish_all,
    wait_until,
    worker_env,
)

pytestmark = pytest.mark.live
LED = "esp32_01__set_led_color"


def tools_listed(base: str, token: str) -> set[str]:
    return {t["name"] for t in http_request(base, token, "tools/list")["tools"]}


def text_of(result: dict) -> str:
    return " ".join(c.get("text", "") for c in result["content"])


def test_an_llm_discovers_lists_and_calls_an_mqtt_agent(live_env, make_token, tmp_path):
    token = make_token(name="llm")
    # Known beforehand only to give it a short call timeout; discovery does the rest.
    Agent.objects.create(agent_id="esp32_01", transport=Agent.Transport.MQTT, approved=True, call_timeout=2)
    with (
        broker(tmp_path / "broker") as b,
        hub(live_env, serve=True, MQTT_URL=b.url, MQTT_CLIENT_ID="hub") as base,
    ):
        agent = SimulatedMqttAgent("127.0.0.1", b.port, "esp32_01", silent_tools=("calibrate",))
        agent.start()
        wait_until(
            lambda: AgentTool.objects.filter(agent__agent_id="esp32_01").count() == 3, what="discovery"
        )
        wait_until(lambda: LED in tools_listed(base, token), what="the tool offered to LLMs")

        done = http_call(base, token, LED, {"r": 255, "g": 0, "b": 0})
        refused = http_call(base, token, LED, {"r": 300, "g": 0, "b": 0})
        started = time.monotonic()
        silent = http_call(base, token, "esp32_01__calibrate", {})
        waited = time.monotonic() - started
        by_name = http_call(
            base,
            token,
            "call_agent_tool",
            {"agent_id": "esp32_01", "tool": "read_sensor", "arguments": {"channel": "co2"}},
        )
        listed = http_call(base, token, "list_agents", {})["structuredContent"]["agents"]

        agent.stop(gracefully=False)  # the broker sends its last will
        wait_until(
            lambda: not Agent.objects.get(agent_id="esp32_01").online, what="offline after the last will"
        )
        wait_until(lambda: LED not in tools_listed(base, token), what="its tools withdrawn")

    assert not done.get("isError") and "LED color set to (255, 0, 0)" in text_of(done)
    assert agent.state.led == (255, 0, 0)
    assert refused["isError"] and "Invalid color" in text_of(refused)  # a string error, understood
    assert silent["isError"] and "did not answer" in text_of(silent) and 1.5 < waited < 10
    assert text_of(by_name).startswith("co2=")
    (row,) = [a for a in listed if a["agent_id"] == "esp32_01"]
    assert row["transport"] == "mqtt" and row["online"] is True
    assert {t["name"] for t in row["tools"]} == {"set_led_color", "read_sensor", "calibrate"}
    assert not AgentTool.objects.filter(agent__agent_id="esp32_01", available=True).exists()
    calls = Event.objects.filter(action="agent.call", target="agent:esp32_01")
    assert calls.count() == 4 and set(calls.values_list("actor", flat=True)) == {"llm"}
    assert Event.objects.filter(action="agent.disconnect", target="agent:esp32_01").exists()
    # Each device call is audited once, on the agent, not again as a plain tool call.
    assert not Event.objects.filter(
        action="tool.call", target__in=[f"tool:{LED}", "tool:call_agent_tool"]
    ).exists()
    # A successful read is counted in /metrics, not stored.
    assert not Event.objects.filter(action="tool.call", target="tool:list_agents").exists()


def test_mqtt_agent_served_by_a_separate_worker_over_redis(live_env, make_token, redis_url, tmp_path):
    token = make_token(name="far-llm")
    with broker(tmp_path / "broker") as b:
        env = worker_env(live_env, b.url, REDIS_URL=redis_url)
        mqtt_worker = Process(["mqtt_worker", "--client-id", "far"], env, tmp_path / "worker.log")
        try:
            with hub(live_env, REDIS_URL=redis_url) as base:
                approve_mqtt_agents("esp32_02")
                agent = SimulatedMqttAgent("127.0.0.1", b.port, "esp32_02")
                agent.start()
                name = "esp32_02__set_led_color"
                wait_until(
                    lambda: name in tools_listed(base, token), what="discovery seen by the other process"
                )
                result = http_call(base, token, name, {"r": 1, "g": 2, "b": 3})
                agent.stop()
        finally:
            mqtt_worker.stop()
    assert not result.get("isError"), result
    assert agent.state.led == (1, 2, 3)


def test_announcements_that_could_reach_other_topics_are_refused(live_env, tmp_path):
    env = worker_env(live_env, "")
    with broker(tmp_path / "broker") as b:
        env["MQTT_URL"] = b.url
        proc = Process(["mqtt_worker", "--client-id", "guard"], env, tmp_path / "w.log")
        try:
            wait_until(lambda: "connected to" in proc.output(), what="the worker connected")
            pub = client(b.url)
            publish_all(
                pub,
                [
                    ("mcp/discovery", {"agent_id": "evil/../x", "capabilities": []}),
                    ("mcp/discovery", {"agent_id": "a+b", "capabilities": []}),
                    ("mcp/discovery", "not json"),
                ],
            )
            wait_until(
                lambda: RejectedMessage.objects.filter(topic="mcp/discovery").count() == 3, what="rejections"
            )
            pub.loop_stop()
        finally:
            proc.stop()
    assert not Agent.objects.exists()
    reasons = set(RejectedMessage.objects.values_list("reason", flat=True))
    assert "agent_id must be 1 to 64 of A-Z a-z 0-9 _ -" in reasons and "announcement is not JSON" in reasons


def test_lights_and_alarm_state_out_and_commands_in(live_env, staff_client, tmp_path):
    with (
        broker(tmp_path / "broker") as b,
        hub(live_env, serve=True, MQTT_URL=b.url, MQTT_CLIENT_ID="hub") as base,
    ):
        states: dict[str, str] = {}
        watcher = client(b.url)
        watcher.on_message = lambda c, u, m: states.__setitem__(m.topic, m.payload.decode())
        watcher.subscribe("homehub/#", 1)
        wait_until(lambda: states.get("homehub/lights/salon/state") == '{"on": false}', what="retained state")
        assert states["homehub/status"] == "online"
        assert states["homehub/alarm/state"] == '{"armed": false}'

        publish_all(
            watcher, [("homehub/lights/salon/set", "on"), ("homehub/alarm/set", json.dumps({"armed": True}))]
        )
        wait_until(
            lambda: states.get("homehub/lights/salon/state") == '{"on": true}', what="the command applied"
        )
        wait_until(lambda: states.get("homehub/alarm/state") == '{"armed": true}')
        assert Light.objects.get(name="salon").on is True
        assert Event.objects.filter(action="light.set", interface="mqtt", actor="mqtt").exists()

        # A change through another door (the REST API of the same hub) goes out too.
        import httpx

        from mcp_endpoint.auth.tokens import create_token

        rest = create_token("rest", ["control"], actor="test", interface="system")[1]
        changed = httpx.patch(
            f"{base}/api/lights/cocina", json={"on": True}, headers={"authorization": f"Bearer {rest}"}
        )
        assert changed.status_code == 200, changed.text
        wait_until(
            lambda: states.get("homehub/lights/cocina/state") == '{"on": true}', what="REST change published"
        )

        publish_all(watcher, [("homehub/lights/nowhere/set", "on"), ("homehub/lights/salon/set", "maybe")])
        wait_until(lambda: RejectedMessage.objects.count() == 2, what="bad commands kept")
        watcher.loop_stop()
    reasons = dict(RejectedMessage.objects.values_list("topic", "reason"))
    assert reasons["homehub/lights/nowhere/set"] == "Luz 'nowhere' no encontrada"
    assert reasons["homehub/lights/salon/set"].startswith("expected on/off")


def test_the_hub_serves_without_a_broker_and_says_so(live_env, make_token):
    import httpx

    from devices.mqtt import status
    from tests.conftest import free_port

    token = make_token(scopes=["read"])
    nowhere = f"mqtt://127.0.0.1:{free_port()}"
    with hub(live_env, serve=True, MQTT_URL=nowhere, MQTT_CLIENT_ID="lonely") as base:
        lights = httpx.get(f"{base}/api/lights", headers={"authorization": f"Bearer {token}"})
        wait_until(lambda: status.workers(), what="the worker's report")
        state = status.broker_state()
    assert lights.status_code == 200 and len(lights.json()) == 5
    assert state == "disconnected"


def test_an_agent_silent_beyond_its_heartbeat_goes_offline(live_env, tmp_path):
    with broker(tmp_path / "broker") as b, hub(live_env, serve=True, MQTT_URL=b.url, MQTT_CLIENT_ID="hub"):
        agent = SimulatedMqttAgent("127.0.0.1", b.port, "esp32_03", heartbeat=0.5)
        agent.start()
        wait_until(lambda: Agent.objects.filter(agent_id="esp32_03", online=True).exists(), what="online")
        time.sleep(2)  # heartbeats keep it online past three intervals
        assert Agent.objects.get(agent_id="esp32_03").online
        agent.pause_heartbeats()
        wait_until(lambda: not Agent.objects.get(agent_id="esp32_03").online, timeout=10, what="offline")
        agent.stop()
    assert Event.objects.filter(action="agent.disconnect", target="agent:esp32_03").exists()


def test_an_agent_that_announces_itself_waits_for_the_owners_approval(
    live_env, make_token, tmp_path, django_user_model
):
    """Anyone the broker lets publish may announce on mcp/discovery: the agent is recorded
    pending, its tools are neither discovered, offered to LLMs nor callable, until the owner
    approves it on the Devices page (audited); then it is served as any agent."""
    import httpx

    from tests.hub_support import log_in_over_http

    django_user_model.objects.create_superuser("boss", "boss@example.com", "pw-for-tests-only")
    token = make_token(name="llm")
    tool = "stranger_01__set_led_color"
    with (
        broker(tmp_path / "broker") as b,
        hub(live_env, serve=True, MQTT_URL=b.url, MQTT_CLIENT_ID="hub") as base,
    ):
        stranger = SimulatedMqttAgent("127.0.0.1", b.port, "stranger_01")
        stranger.start()
        wait_until(lambda: Agent.objects.filter(agent_id="stranger_01", online=True).exists(), what="online")
        time.sleep(1.5)  # what its discovery would have taken
        tools_before = AgentTool.objects.filter(agent__agent_id="stranger_01").count()
        listed_before = tool in tools_listed(base, token)
        refused = http_call(
            base,
            token,
            "call_agent_tool",
            {"agent_id": "stranger_01", "tool": "set_led_color", "arguments": {"r": 1, "g": 2, "b": 3}},
        )
        agents_before = http_call(base, token, "list_agents", {})["structuredContent"]["agents"]

        with httpx.Client(base_url=base, timeout=15) as browser:
            log_in_over_http(browser, "boss", "pw-for-tests-only")
            page = browser.get("/devices/")
            approved = browser.post(
                "/devices/approve/",
                data={"agent_id": "stranger_01", "csrfmiddlewaretoken": browser.cookies["csrftoken"]},
                headers={"accept": "application/json"},
            )
        wait_until(lambda: tool in tools_listed(base, token), what="its tools offered once approved")
        done = http_call(base, token, tool, {"r": 4, "g": 5, "b": 6})
        stranger.stop()

    assert tools_before == 0 and not listed_before
    assert refused["isError"] and "waiting for an administrator's approval" in text_of(refused)
    assert "stranger_01" not in {a["agent_id"] for a in agents_before}
    assert "Waiting for approval" in page.text and "/devices/approve/" in page.text
    assert approved.status_code == 200, approved.text
    assert not done.get("isError") and stranger.state.led == (4, 5, 6)
    pending = Event.objects.get(action="agent.pending", target="agent:stranger_01")
    assert (pending.actor, pending.interface, pending.after["approved"]) == ("stranger_01", "device", False)
    approval = Event.objects.get(action="agent.approve", target="agent:stranger_01")
    assert (approval.actor, approval.interface) == ("boss", "dashboard")
