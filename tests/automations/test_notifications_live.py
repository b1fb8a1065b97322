"""Against a live hub (daphne): a dangerous call made over /mcp by the official SDK client with a
token waits for a person, and the hub sends the owners' notice to a real receiver on loopback,
counts it in /metrics and keeps the dashboard's copy."""

from __future__ import annotations

import httpx
import pytest
from asgiref.sync import async_to_sync

from automations.notifications.models import Notification
from devices.home import selectors, services
from tests.devices_support import hub
from tests.mcp_helpers import sdk_client

pytestmark = pytest.mark.live


def test_a_token_call_waiting_for_a_person_is_sent_to_the_households_service(
    live_env, make_token, http_receiver
):
    services.set_alarm_state(True, actor="test", interface="system")
    token = make_token(name="Claude")

    async def disarm(base: str):
        async with sdk_client(base, token, timeout=30) as client:
            return await client.call_tool("set_alarm_state", {"armed": False})

    with hub(live_env, NOTIFY_URLS=http_receiver.url("household"), MCP_CONFIRMATION_SECONDS="2") as base:
        result = async_to_sync(disarm)(base)
        (post,) = http_receiver.wait(1)
        metrics = httpx.get(f"{base}/metrics", timeout=10).text

    assert result.is_error and selectors.alarm()["armed"] is True  # nobody approved it
    assert post["path"] == "/household" and post["title"] == "Approval needed"
    assert post["message"].startswith("Claude (through ")
    assert '{"armed": false}' in post["message"]
    assert 'homehub_notification_deliveries_total{outcome="sent"} 1.0' in metrics
    row = Notification.objects.get()
    assert (row.source, row.owners_only) == ("request", True) and row.link.startswith("/requests/")
