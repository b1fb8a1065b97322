"""Prometheus figures of the MCP server. Per call: one counter increment and one histogram
observation in memory (no database write). With PROMETHEUS_MULTIPROC_DIR set, prometheus_client
keeps them in that folder so that /metrics of any process on the host sums every process's;
the open HTTP sessions are counted in the database at scrape time (any process serves them)."""

from __future__ import annotations

import atexit
import os
from collections.abc import Iterator

from prometheus_client import Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics_core import Metric

TOOL_CALLS = Counter(
    "homehub_mcp_tool_calls",
    "MCP tool calls, by tool, outcome (ok, error, rate_limited, forbidden, unknown_tool, "
    "input_required, missing_capability, not_confirmed) and transport.",
    ["tool", "outcome", "interface"],
)
TOOL_CALL_SECONDS = Histogram(
    "homehub_mcp_tool_call_seconds",
    "Time to answer an MCP tool call that ran (ok or error), by tool.",
    ["tool"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
)
WEBSOCKET_CONNECTIONS = Gauge(
    "homehub_mcp_websocket_connections",
    "Open MCP WebSocket connections (/ws/mcp/), summed over the live processes.",
    multiprocess_mode="livesum",
)
UNKNOWN_TOOL = "(unknown)"  # unknown names are not labels: a client could invent endless ones


def record_call(tool: str, outcome: str, interface: str, seconds: float | None = None) -> None:
    TOOL_CALLS.labels(tool, outcome, interface).inc()
    if seconds is not None:
        TOOL_CALL_SECONDS.labels(tool).observe(seconds)


class SessionsCollector:
    """`homehub_mcp_http_sessions`, read from the database when scraped."""

    def collect(self) -> Iterator[Metric]:
        from mcp_endpoint.transports.http_sessions import count_open

        yield GaugeMetricFamily(
            "homehub_mcp_http_sessions",
            "Open MCP Streamable HTTP sessions (not ended, used within MCP_SESSION_IDLE_SECONDS).",
            value=count_open(),
        )


class EndpointsCollector:
    """Each outbound MCP endpoint's connection and the calls it served, read from the database
    when scraped (whichever process holds the connection wrote them there)."""

    def collect(self) -> Iterator[Metric]:
        from mcp_endpoint.transports.outbound.endpoints import statuses

        connected = GaugeMetricFamily(
            "homehub_mcp_endpoint_connected",
            "1 while the outbound MCP endpoint (xiaozhi) is connected, by endpoint name.",
            labels=["endpoint"],
        )
        calls = CounterMetricFamily(
            "homehub_mcp_endpoint_calls",
            "tools/call requests the outbound MCP endpoint sent, by endpoint name.",
            labels=["endpoint"],
        )
        for endpoint in statuses():
            connected.add_metric([endpoint["name"]], 1 if endpoint["connected"] else 0)
            calls.add_metric([endpoint["name"]], endpoint["calls"])
        yield connected
        yield calls


if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):

    @atexit.register
    def _forget_live_gauges() -> None:
        """A process that stops cleanly takes its open-connection count with it."""
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(os.getpid())
