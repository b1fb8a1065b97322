"""`/metrics` scraped from real daphne processes after real calls: MCP tool calls by tool and
outcome with latencies, sessions, devices online, telemetry stored and rejected through an
MQTT worker, broker links, across processes through PROMETHEUS_MULTIPROC_DIR."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.devices_support import LlmSession, eventually, hub, new_device
from tests.mcp_endpoint.test_mcp_http import INIT, post, sse_messages
from tests.mcp_helpers import call
from tests.mqtt_support import broker, client, publish_all, readings, wait_until, worker, worker_env

pytestmark = pytest.mark.live


def scrape(base: str, token: str | None = None) -> dict[tuple[str, tuple], float]:
    """Every sample as {(name, sorted labels): value}."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    response = httpx.get(base + "/metrics", headers=headers, timeout=10)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def calls(figures: dict, tool: str, outcome: str, interface: str = "mcp-http") -> float:
    labels = (("interface", interface), ("outcome", outcome), ("tool", tool))
    return figures.get(("homehub_mcp_tool_calls_total", labels), 0)


def tool_call(base: str, token: str, session: str, name: str, arguments: dict) -> dict:
    return sse_messages(post(base, call(name, arguments), token, session).text)[0]


def test_mcp_and_device_figures_move_with_real_calls(live_env, make_token):
    reader, controller = make_token(["read"], name="reader"), make_token()
    with hub(live_env) as base:
        before = scrape(base)
        assert before[("homehub_mcp_http_sessions", ())] == 0
        assert before[("homehub_devices_online", (("transport", "ws"),))] == 0
        assert before[("homehub_mcp_websocket_connections", ())] == 0

        session = post(base, INIT, controller).headers["mcp-session-id"]
        assert "result" in tool_call(base, controller, session, "get_alarm_status", {})
        assert "result" in tool_call(base, controller, session, "get_alarm_status", {})
        failed = tool_call(base, controller, session, "set_light_state", {"name": "no-such-room", "on": True})
        assert failed["result"]["isError"] is True
        assert "error" in tool_call(base, controller, session, "made_up_tool", {})
        read_only = post(base, INIT, reader).headers["mcp-session-id"]
        refused = post(base, call("set_alarm_state", {"armed": True}), reader, read_only)
        assert refused.status_code == 403

        figures = scrape(base)
        assert calls(figures, "get_alarm_status", "ok") == 2
        assert calls(figures, "set_light_state", "error") == 1
        assert calls(figures, "(unknown)", "unknown_tool") == 1
        assert calls(figures, "set_alarm_state", "forbidden") == 1
        latency = ("homehub_mcp_tool_call_seconds_count", (("tool", "get_alarm_status"),))
        assert figures[latency] == 2
        assert figures[("homehub_mcp_tool_call_seconds_sum", (("tool", "get_alarm_status"),))] > 0
        assert figures[("homehub_mcp_http_sessions", ())] == 2

        device = new_device(base, "aa:bb:cc:00:00:42")

        async def live_connections():
            await device.connect()
            async with LlmSession(base, controller) as llm:
                await llm.call("list_agents", {})
                during = await eventually(
                    lambda: asyncio.to_thread(
                        lambda: (
                            (f := scrape(base))[("homehub_devices_online", (("transport", "ws"),))] == 1 and f
                        )
                    ),
                    timeout=10,
                )
            await device.close()
            return during

        during = asyncio.run(live_connections())
        assert during[("homehub_mcp_websocket_connections", ())] == 1
        assert calls(during, "list_agents", "ok", "mcp-ws") == 1
        wait_until(lambda: scrape(base)[("homehub_mcp_websocket_connections", ())] == 0, what="closed")
        wait_until(
            lambda: scrape(base)[("homehub_devices_online", (("transport", "ws"),))] == 0, what="offline"
        )


def test_processes_share_figures_and_telemetry_is_counted(live_env, make_token, tmp_path):
    """Two daphne processes and an MQTT worker write to one PROMETHEUS_MULTIPROC_DIR: either
    daphne reports what the others counted; the scrape token guards /metrics."""
    folder = tmp_path / "prometheus"
    folder.mkdir()
    token = make_token()
    with broker(tmp_path / "broker") as mosquitto:
        env = worker_env(
            live_env, mosquitto.url, PROMETHEUS_MULTIPROC_DIR=str(folder), MQTT_CLIENT_ID="homehub-worker"
        )
        scraped = {**env, "METRICS_TOKEN": "scrape-secret"}
        with hub(env) as first, hub(scraped) as second, worker(env, tmp_path / "worker.log"):
            session = post(first, INIT, token).headers["mcp-session-id"]
            for _ in range(3):
                assert "result" in tool_call(first, token, session, "get_presence", {})

            assert httpx.get(second + "/metrics").status_code == 401  # METRICS_PUBLIC is no way round it
            assert (
                httpx.get(second + "/metrics", headers={"Authorization": "Bearer wrong"}).status_code == 401
            )
            figures = scrape(second, "scrape-secret")
            assert calls(figures, "get_presence", "ok") == 3

            link = ("homehub_mqtt_broker_connected", (("worker", "homehub-worker"),))
            wait_until(lambda: scrape(second, "scrape-secret").get(link) == 1, what="the worker's link")
            assert scrape(second, "scrape-secret")[("homehub_mqtt_workers_running", ())] == 1

            publisher = client(mosquitto.url)
            bad = [
                ("office/lab/sensor/env_01/temperature", "{oops"),
                ("office/lab/sensor/env_01/pressure", {}),
            ]
            publish_all(publisher, [*readings(5), *bad])
            publisher.loop_stop()
            rejected = ("homehub_telemetry_messages_rejected_total", ())
            figures = wait_until(
                lambda: (f := scrape(second, "scrape-secret"))[rejected] == 2 and f, what="two rejections"
            )
            assert figures[("homehub_telemetry_readings_ingested_total", ())] == 5


def test_metrics_are_closed_unless_a_token_or_metrics_public_opens_them(live_env):
    closed = {k: v for k, v in live_env.items() if k not in {"METRICS_PUBLIC", "METRICS_TOKEN"}}
    with hub(closed) as base:
        refused = httpx.get(base + "/metrics")
        assert refused.status_code == 403 and "set METRICS_TOKEN" in refused.text
        assert "homehub_" not in refused.text
    with hub(closed, METRICS_PUBLIC="1") as base:
        assert "homehub_mcp_http_sessions" in httpx.get(base + "/metrics").text
