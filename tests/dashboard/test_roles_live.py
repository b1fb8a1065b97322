"""Issue 25's finding, against a live hub: a plain account (a guest: in no role's group) logged
in over HTTP could approve an LLM's waiting disarm, arm and disarm, and read the audit trail.
Now each of those doors answers 403, the waiting call lapses unapproved, and its live socket
carries a light's change without who made it."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
from asgiref.sync import async_to_sync
from django.conf import settings
from websockets.asyncio.client import connect

from devices.home import selectors, services
from mcp_endpoint.models import PendingConfirmation
from tests.devices_support import hub
from tests.hub_support import log_in_over_http
from tests.mcp_endpoint.test_confirmation_live import sdk_call

pytestmark = pytest.mark.live
PASSWORD = "pw-for-tests-only-9"


async def light_event_heard(base: str, cookie: str) -> tuple[dict, dict]:
    """The hello and the first light change a guest's open page hears."""
    url = base.replace("http://", "ws://") + "/ws/home/"
    async with connect(url, additional_headers={"Cookie": cookie, "Origin": base}) as ws:
        hello = json.loads(await ws.recv())
        await asyncio.to_thread(services.set_light_state, "salon", True, actor="claude", interface="mcp-http")
        while True:
            message = json.loads(await asyncio.wait_for(ws.recv(), 10))
            if message["type"] == "event" and message["event"].get("kind") == "light":
                return hello, message["event"]


def test_a_plain_account_cannot_approve_arm_or_read_the_trail(live_env, make_token, django_user_model):
    django_user_model.objects.create_user("visitor", password=PASSWORD)  # no role: a guest
    services.set_alarm_state(True, actor="test", interface="system")
    token = make_token(name="script")

    with (
        hub(live_env, MCP_CONFIRMATION_SECONDS="4") as base,
        httpx.Client(base_url=base, timeout=10) as browser,
    ):
        log_in_over_http(browser, "visitor", PASSWORD)
        csrf = {"X-CSRFToken": browser.cookies["csrftoken"]}

        async def scenario():
            calling = asyncio.ensure_future(
                asyncio.to_thread(sdk_call, base, token, "set_alarm_state", {"armed": False})
            )
            for _ in range(100):
                waiting = await asyncio.to_thread(
                    PendingConfirmation.objects.filter(decision="pending").first
                )
                if waiting is not None:
                    break
                await asyncio.sleep(0.05)
            else:
                raise AssertionError("the call never waited")
            form = {"csrfmiddlewaretoken": browser.cookies["csrftoken"], "decision": "approve"}
            approval = await asyncio.to_thread(browser.post, f"/requests/{waiting.pk}/", data=form)
            return approval, await asyncio.wait_for(calling, 30)

        approval, result = async_to_sync(scenario)()
        assert approval.status_code == 403 and "needs the owner role" in approval.text
        assert result.is_error and "not approved" in result.content[0].text
        assert selectors.alarm()["armed"] is True

        form = {"csrfmiddlewaretoken": browser.cookies["csrftoken"], "armed": "0", "confirm": "yes"}
        assert browser.post("/alarm/", data=form).status_code == 403
        rest = browser.patch("/api/alarm", json={"armed": False}, headers=csrf)
        assert rest.status_code == 403 and rest.json()["detail"].startswith("This needs the member role")
        assert browser.get("/api/events").status_code == 403
        assert browser.get("/activity/").status_code == 403
        assert selectors.alarm()["armed"] is True
        assert browser.get("/").status_code == 200  # the home itself is a guest's

        cookie = f"{settings.SESSION_COOKIE_NAME}={browser.cookies[settings.SESSION_COOKIE_NAME]}"
        hello, event = async_to_sync(light_event_heard)(base, cookie)
    assert hello["role"] == "guest"
    assert event["on"] is True and "actor" not in event and "interface" not in event
