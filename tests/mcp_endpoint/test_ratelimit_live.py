"""The per-token rate limit with several hub processes and no Redis: the processes share the
count through the database (each used to count alone, so two processes let a token make twice
its budget)."""

import pytest

from mcp_endpoint.auth import tokens
from mcp_endpoint.models import RateCount
from tests.hub_support import running_hub
from tests.mcp_endpoint.test_oauth_live import call_tool

pytestmark = pytest.mark.live
LIMIT = 10


def test_two_processes_share_one_budget_without_redis(live_env):
    _, token = tokens.create_token("busy agent", ["read"], actor="test", interface="system")
    limits = {"MCP_RATE_LIMIT": str(LIMIT), "MCP_RATE_WINDOW_SECONDS": "3600"}
    assert "REDIS_URL" not in live_env
    with running_hub(live_env, **limits) as first, running_hub(live_env, **limits) as second:
        answers = [
            call_tool(hub.base, token, "get_alarm_status", {}) for _ in range(8) for hub in (first, second)
        ]
    assert all(answer.status_code == 200 for answer in answers)
    limited = ["Rate limit exceeded for this token" in answer.text for answer in answers]
    assert limited.count(False) == LIMIT  # not 2 * LIMIT: one budget for both processes
    assert limited == [False] * LIMIT + [True] * (len(answers) - LIMIT)
    assert RateCount.objects.get().count >= LIMIT
