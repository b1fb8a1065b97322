"""A person on the hub confirms a dangerous call made over /mcp by the official SDK client,
against a live hub (issues #19, #25): on the dashboard's Requests page, or on the request's own
page handed to the client as a URL-mode elicitation, by the owner logged in over HTTP. The
client's own answer (both eras: a session's `elicitation/create`, a stateless request's input
response) confirms only a tool the owner marked "the client's confirmation is enough"."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest
from asgiref.sync import async_to_sync

from audit.models import Event
from devices.home import selectors, services
from mcp_endpoint.models import PendingConfirmation, ToolSetting
from tests.conftest import free_port
from tests.devices_support import hub
from tests.hub_support import HubProcess, create_account, log_in_over_http
from tests.mcp_endpoint.test_mcp_http import post, sse_messages
from tests.mcp_helpers import MODERN_META, sdk_client

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


@contextmanager
def hub_that_knows_its_url(env: dict[str, str], **settings: str) -> Iterator[str]:
    """A hub whose HUB_URL is its own address: it hands URL-mode clients approval pages."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    process = HubProcess({**env, "MCP_RATE_LIMIT": "0", "HUB_URL": base, **settings}, port=port)
    try:
        yield process.start().base
    finally:
        process.close()


def accepting(asked: list):
    """An SDK elicitation callback that says yes to whatever it is asked (form or URL)."""
    from mcp import types

    async def elicit(context, params):
        asked.append(params)
        if getattr(params, "mode", "form") == "url":
            return types.ElicitResult(action="accept")
        return types.ElicitResult(action="accept", content={"confirm": True})

    return elicit


def the_client_confirms(tool: str) -> None:
    """The owner marks `tool` "the client's confirmation is enough" (before the hub starts)."""
    ToolSetting.objects.update_or_create(name=tool, defaults={"client_confirms": True})


@pytest.mark.parametrize("mode", ["legacy", "auto"])  # auto: 2026-07-28, stateless input requests
def test_a_client_answering_its_own_question_never_disarms(live_env, make_token, mode):
    services.set_alarm_state(True, actor="test", interface="system")
    token = make_token(name="assistant")
    asked: list = []
    with hub_that_knows_its_url(live_env, MCP_CONFIRMATION_SECONDS="3") as base:
        result = sdk_call(
            base, token, "set_alarm_state", {"armed": False}, mode=mode, elicit=accepting(asked)
        )
    assert result.is_error and "not approved on the dashboard within 3 s" in result.content[0].text
    assert selectors.alarm()["armed"] is True
    assert asked and {params.mode for params in asked} == {"url"}  # only ever sent to the hub's page
    assert not Event.objects.filter(action="alarm.set", actor="assistant").exists()


def test_a_stateless_first_request_carrying_its_own_answer_never_disarms(live_env, make_token):
    services.set_alarm_state(True, actor="test", interface="system")
    token = make_token(name="assistant")
    meta = {**MODERN_META, "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}}
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "set_alarm_state",
            "arguments": {"armed": False},
            "_meta": meta,
            "inputResponses": {"confirm": {"action": "accept", "content": {"confirm": True}}},
        },
    }
    headers = {
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": "set_alarm_state",
    }
    with hub(live_env, MCP_CONFIRMATION_SECONDS="1") as base:
        answer = sse_messages(post(base, body, token, **headers).text)[-1]["result"]
    assert answer["isError"] is True and "not approved" in answer["content"][0]["text"]
    assert selectors.alarm()["armed"] is True


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_a_disarm_confirmed_in_the_client_when_the_owner_says_it_is_enough(live_env, make_token, mode):
    services.set_alarm_state(True, actor="test", interface="system")
    the_client_confirms("set_alarm_state")
    token = make_token(name="assistant")
    asked: list = []
    with hub(live_env) as base:
        result = sdk_call(
            base, token, "set_alarm_state", {"armed": False}, mode=mode, elicit=accepting(asked)
        )
    assert not result.is_error, result.content
    assert selectors.alarm()["armed"] is False
    assert len(asked) == 1 and "assistant (through mcp-http) asks to run set_alarm_state" in asked[0].message
    event = Event.objects.get(action="tool.call", actor="assistant")
    assert event.after["confirmation"] == "confirmed in the client"


def test_a_disarm_declined_in_the_client(live_env, make_token):
    from mcp import types

    services.set_alarm_state(True, actor="test", interface="system")
    the_client_confirms("set_alarm_state")

    async def elicit(context, params):
        return types.ElicitResult(action="decline")

    with hub(live_env) as base:
        result = sdk_call(base, make_token(), "set_alarm_state", {"armed": False}, elicit=elicit)
    assert result.is_error and "declined in the client" in result.content[0].text
    assert selectors.alarm()["armed"] is True


def test_the_owner_approves_on_the_page_handed_to_the_client_once(live_env, make_token, owner):
    services.set_alarm_state(True, actor="test", interface="system")
    token = make_token(name="assistant")
    asked: list = []

    def elicit_to(loop, urls: asyncio.Queue):
        from mcp import types

        async def elicit(context, params):
            asked.append(params)
            loop.call_soon_threadsafe(urls.put_nowait, params.url)
            return types.ElicitResult(action="accept")

        return elicit

    def approve_on(url: str) -> tuple[str, int, str]:
        """The owner opens the page the client was handed and approves; the page, the answer."""
        with logged_in(base) as browser:
            page = browser.get(url).text
            form = {"csrfmiddlewaretoken": browser.cookies["csrftoken"], "decision": "approve"}
            answered = browser.post(url, data=form)
            return page, answered.status_code, browser.get(url).text

    async def one_call(approve_old: str | None = None):
        urls: asyncio.Queue = asyncio.Queue()
        elicit = elicit_to(asyncio.get_running_loop(), urls)
        calling = asyncio.ensure_future(
            asyncio.to_thread(sdk_call, base, token, "set_alarm_state", {"armed": False}, elicit=elicit)
        )
        url = await asyncio.wait_for(urls.get(), 20)
        approval = await asyncio.to_thread(approve_on, approve_old or url)
        return url, approval, await asyncio.wait_for(calling, 30)

    with hub_that_knows_its_url(live_env, MCP_CONFIRMATION_SECONDS="5") as base:
        url, (page, status, after), result = async_to_sync(one_call)()
        assert not result.is_error, result.content
        assert selectors.alarm()["armed"] is False
        services.set_alarm_state(True, actor="test", interface="system")
        # The same approval, used again (the old page approved anew for an identical call): nothing runs.
        second_url, (_, _, second_after), second = async_to_sync(one_call)(approve_old=url)
    assert url.startswith(base + "/requests/") and asked[0].mode == "url" and asked[0].elicitation_id
    assert "Approve this action?" in page and "&quot;armed&quot;: false" in page
    assert status == 302 and "no longer waits" in after
    assert second_url != url and "no longer waits" in second_after
    assert second.is_error and "not approved" in second.content[0].text
    assert selectors.alarm()["armed"] is True
    first = PendingConfirmation.objects.get(pk=int(url.rstrip("/").rsplit("/", 1)[1]))
    assert first.consumed_at is not None and first.decided_by == OWNER
    assert Event.objects.filter(action="alarm.set", actor="assistant").count() == 1


def test_arming_over_a_token_answers_at_once_and_disarming_waits(live_env, make_token):
    token = make_token(name="script")
    with hub(live_env, MCP_CONFIRMATION_SECONDS="2") as base:
        started = time.monotonic()
        armed = sdk_call(base, token, "set_alarm_state", {"armed": True})
        arming_took = time.monotonic() - started
        disarmed = sdk_call(base, token, "set_alarm_state", {"armed": False})
    assert not armed.is_error and arming_took < 2
    assert disarmed.is_error and "not approved on the dashboard within 2 s" in disarmed.content[0].text
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
    assert "script (through /mcp) asks to disarm the alarm" in page and "set_alarm_state" in page
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
    services.set_alarm_state(True, actor="test", interface="system")
    token = make_token(name="script")

    async def scenario(base: str):
        calling = asyncio.ensure_future(
            asyncio.to_thread(sdk_call, base, token, "set_alarm_state", {"armed": False})
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
    assert selectors.alarm()["armed"] is True
