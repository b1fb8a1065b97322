"""A person confirms a dangerous call made over /mcp by the official SDK client, against a
live hub (issue #19): in the client, through elicitation (both eras: a session's
`elicitation/create`, a stateless request's input request), or, for a client that cannot
ask, on the dashboard's Requests page by the owner logged in over HTTP."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest
from asgiref.sync import async_to_sync

from devices.audit.models import Event
from devices.home import selectors, services
from tests.devices_support import hub
from tests.hub_support import create_account, log_in_over_http
from tests.mcp_helpers import sdk_client

pytestmark = pytest.mark.live
OWNER, PASSWORD = "ana", "pw-for-tests-only-9"


@pytest.fixture
def owner(live_env, django_user_model):
    return create_account(OWNER, PASSWORD)


def sdk_call(base: str, token: str, name: str, arguments: dict, *, mode: str = "legacy", elicit=None):
    """One tool call through the SDK client over Streamable HTTP; its result."""

    async def scenario():
        options = {"elicitation_callback": elicit} if elicit else {}
        async with sdk_client(base, token, timeout=30, mode=mode, **options) as client:
            return await client.call_tool(name, arguments)

    return async_to_sync(scenario)()


@contextmanager
def logged_in(base: str) -> Iterator[httpx.Client]:
    """The owner's browser, logged in to the dashboard."""
    with httpx.Client(base_url=base, timeout=10) as browser:
        log_in_over_http(browser, OWNER, PASSWORD)
        yield browser


def answer_on_the_dashboard(base: str, decision: str) -> str:
    """The owner opens the Requests page once a request waits, and answers it; the page."""
    with logged_in(base) as browser:
        for _ in range(100):
            page = browser.get("/requests/").text
            found = re.search(r'action="(/requests/\d+/)"', page)
            if found:
                break
            async_to_sync(asyncio.sleep)(0.1)
        else:
            raise AssertionError("no request appeared on the dashboard")
        form = {"csrfmiddlewaretoken": browser.cookies["csrftoken"], "decision": decision}
        assert browser.post(found[1], data=form).status_code == 302
        return page


@pytest.mark.parametrize("mode", ["legacy", "auto"])  # auto: 2026-07-28, stateless input requests
def test_a_disarm_confirmed_in_the_client(live_env, make_token, mode):
    from mcp import types

    services.set_alarm_state(True, actor="test", interface="system")
    token = make_token(name="assistant")
    asked: list[str] = []

    async def elicit(context, params):
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"confirm": True})

    with hub(live_env) as base:
        result = sdk_call(base, token, "set_alarm_state", {"armed": False}, mode=mode, elicit=elicit)
    assert not result.is_error, result.content
    assert selectors.alarm()["armed"] is False
    assert len(asked) == 1 and "assistant (through mcp-http) asks to run set_alarm_state" in asked[0]
    event = Event.objects.get(action="tool.call", actor="assistant")
    assert event.after["confirmation"] == "confirmed in the client"


def test_a_disarm_declined_in_the_client(live_env, make_token):
    from mcp import types

    services.set_alarm_state(True, actor="test", interface="system")

    async def elicit(context, params):
        return types.ElicitResult(action="decline")

    with hub(live_env) as base:
        result = sdk_call(base, make_token(), "set_alarm_state", {"armed": False}, elicit=elicit)
    assert result.is_error and "declined in the client" in result.content[0].text
    assert selectors.alarm()["armed"] is True


@pytest.mark.parametrize("decision", ["approve", "deny"])
def test_a_client_that_cannot_ask_waits_for_the_owner_on_the_dashboard(live_env, make_token, owner, decision):
    services.set_alarm_state(True, actor="test", interface="system")
    token = make_token(name="script")

    async def scenario(base: str):
        calling = asyncio.ensure_future(
            asyncio.to_thread(sdk_call, base, token, "set_alarm_state", {"armed": False})
        )
        page = await asyncio.to_thread(answer_on_the_dashboard, base, decision)
        return page, await asyncio.wait_for(calling, 30)

    with hub(live_env) as base:
        with logged_in(base) as browser:
            assert "for your approval" not in browser.get("/").text
        page, result = async_to_sync(scenario)(base)
        with logged_in(base) as browser:
            recent = browser.get("/requests/").text
    assert "script" in page and "mcp-http" in page and "set_alarm_state" in page
    assert ("Approved" if decision == "approve" else "Denied") + f" by {OWNER}" in recent
    if decision == "approve":
        assert not result.is_error, result.content
        assert selectors.alarm()["armed"] is False
        how = f"approved by {OWNER} on the dashboard"
    else:
        assert result.is_error and f"denied by {OWNER} on the dashboard" in result.content[0].text
        assert selectors.alarm()["armed"] is True
        how = f"denied by {OWNER} on the dashboard"
    assert Event.objects.get(action="tool.call", actor="script").after["confirmation"] == how


def test_the_banner_shows_while_a_request_waits_and_a_timeout_refuses(live_env, make_token, owner):
    token = make_token(name="script")

    async def scenario(base: str):
        calling = asyncio.ensure_future(
            asyncio.to_thread(sdk_call, base, token, "set_alarm_state", {"armed": True})
        )
        with logged_in(base) as browser:
            for _ in range(50):
                home = await asyncio.to_thread(browser.get, "/")
                if "for your approval" in home.text:
                    break
                await asyncio.sleep(0.1)
        return home.text, await asyncio.wait_for(calling, 30)

    with hub(live_env, MCP_CONFIRMATION_SECONDS="2") as base:
        home, result = async_to_sync(scenario)(base)
    assert "1 action waits for your approval" in home
    assert result.is_error and "not approved on the dashboard within 2 s" in result.content[0].text
    assert selectors.alarm()["armed"] is False
