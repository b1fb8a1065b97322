"""Dangerous tool calls wait for a person (issue #19): which calls, and each way a person
answers — the client's elicitation, the dashboard's Approve and Deny, no answer in time — with
the outcome in the call's audit event. The calls run through the one pipeline, as every door
makes them; the live tests (test_confirmation_live.py) make them over HTTP with the SDK."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from pydantic import BaseModel

from devices.audit.models import Event
from devices.home import selectors
from mcp_endpoint import confirmation
from mcp_endpoint.models import PendingConfirmation
from mcp_endpoint.pipeline import NotConfirmed, call_tool
from mcp_endpoint.registry import Caller, ClientRequest, ToolContext, ToolSettings, registry
from tests.mcp_helpers import tool_on

AGENT = Caller(actor="assistant", interface="mcp-http", audited=True, rate_key="k1", confirms=True)
PERSON = Caller(actor="ana", interface="dashboard", audited=True)
STDIO = Caller(actor="root@stdio", interface="mcp-stdio")
DISARM = ("set_alarm_state", {"armed": False})
ARM = ("set_alarm_state", {"armed": True})

pytestmark = pytest.mark.django_db(transaction=True)


class Nothing(BaseModel):
    pass


class Other(BaseModel):
    tool: str


def elicitation_client(answer: dict[str, Any], asked: list[ClientRequest]) -> ToolContext:
    async def send_request(requests):
        asked.extend(requests)
        return [answer for _ in requests]

    return ToolContext(caller=AGENT, send_request=send_request, client_capabilities={"elicitation": {}})


def call(name: str, arguments: dict, ctx: ToolContext):
    return async_to_sync(call_tool)(name, arguments, ctx)


def owner_answers(approve: bool, decided: list[bool]) -> threading.Thread:
    """The owner, on the dashboard, answers the first request that waits."""

    def answer() -> None:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            waiting = confirmation.open_requests()
            if waiting:
                decided.append(confirmation.decide(waiting[0].pk, approve=approve, by="ana"))
                return
            time.sleep(0.05)

    thread = threading.Thread(target=answer)
    thread.start()
    return thread


def test_which_calls_wait_for_a_person(home):
    tools = registry
    disarm = tools.get("set_alarm_state")
    light = tools.get("set_light_state")
    assert disarm is not None and light is not None
    assert confirmation.required(disarm, {"armed": False}, AGENT)
    assert not confirmation.required(disarm, {"armed": False}, PERSON)  # their click is the confirmation
    assert not confirmation.required(disarm, {"armed": False}, STDIO)
    assert not confirmation.required(light, {"name": "salon", "on": True}, AGENT)
    registry.apply_settings({"set_light_state": ToolSettings(needs_confirmation=True)})  # the owner's mark
    try:
        marked = registry.get("set_light_state")
        assert marked is not None and confirmation.required(marked, {}, AGENT)
    finally:
        registry.apply_settings({})


def test_a_tool_standing_for_a_destructive_one_waits_too():
    from mcp_endpoint.registry import ToolRegistry

    tools = ToolRegistry()

    @tool_on(tools, scope="control", destructive=True)
    def wipe(args: Nothing, ctx: ToolContext) -> dict:
        """Wipes the device"""
        return {"ok": True}

    @tool_on(tools, scope="control", stands_for=lambda arguments: tools.get(arguments.get("tool", "")))
    def call_other(args: Other, ctx: ToolContext) -> dict:
        """Calls another tool"""
        return {"ok": True}

    proxy = tools.get("call_other")
    assert proxy is not None
    assert confirmation.required(proxy, {"tool": "wipe"}, AGENT)
    assert not confirmation.required(proxy, {"tool": "nothing"}, AGENT)


def test_confirmed_by_elicitation(home):
    asked: list[ClientRequest] = []
    ctx = elicitation_client({"action": "accept", "content": {"confirm": True}}, asked)
    result = call(*ARM, ctx)
    assert not result.is_error
    assert selectors.alarm()["armed"] is True
    (question,) = asked
    assert question.method == "elicitation/create"
    assert "assistant (through mcp-http)" in question.params["message"]
    assert question.params["requestedSchema"]["required"] == ["confirm"]
    event = Event.objects.get(action="tool.call", target="tool:set_alarm_state")
    assert event.after == {"ok": True, "ms": event.after["ms"], "confirmation": "confirmed in the client"}
    assert Event.objects.filter(action="alarm.set", actor="assistant").exists()


@pytest.mark.parametrize(
    ("answer", "how"),
    [
        ({"action": "decline"}, "declined in the client"),
        ({"action": "cancel"}, "cancelled in the client"),
        ({"action": "accept", "content": {"confirm": False}}, "declined in the client"),
    ],
)
def test_refused_by_elicitation(home, answer, how):
    result = call(*DISARM, elicitation_client(answer, []))
    assert result.is_error and isinstance(result.reason, NotConfirmed)
    assert result.as_mcp()["content"][0]["text"].endswith(how)
    assert not Event.objects.filter(action="alarm.set").exists()
    assert Event.objects.get(action="tool.call").after["confirmation"] == how


def test_approved_on_the_dashboard(home):
    decided: list[bool] = []
    owner = owner_answers(True, decided)
    result = call(*ARM, ToolContext(caller=AGENT))  # a client that cannot ask its user
    owner.join()
    assert decided == [True] and not result.is_error
    assert selectors.alarm()["armed"] is True
    request = PendingConfirmation.objects.get()
    assert (request.decision, request.decided_by, request.actor, request.interface) == (
        "approved",
        "ana",
        "assistant",
        "mcp-http",
    )
    assert "set_alarm_state" in request.summary and '"armed": true' in request.summary
    event = Event.objects.get(action="tool.call")
    assert event.after["confirmation"] == "approved by ana on the dashboard"


def test_denied_on_the_dashboard(home):
    decided: list[bool] = []
    owner = owner_answers(False, decided)
    result = call(*ARM, ToolContext(caller=AGENT))
    owner.join()
    assert decided == [True] and result.is_error
    assert "denied by ana on the dashboard" in result.as_mcp()["content"][0]["text"]
    assert selectors.alarm()["armed"] is False
    assert PendingConfirmation.objects.get().decision == "denied"
    assert Event.objects.get(action="tool.call").after["confirmation"] == "denied by ana on the dashboard"


def test_no_answer_in_time_refuses_and_the_request_lapses(home, settings):
    settings.MCP_CONFIRMATION_SECONDS = 0.4
    started = time.monotonic()
    result = call(*ARM, ToolContext(caller=AGENT))
    assert result.is_error and time.monotonic() - started < 3
    assert "not approved on the dashboard within 0.4 s" in result.as_mcp()["content"][0]["text"]
    request = PendingConfirmation.objects.get()
    assert request.decision == "expired"
    assert not confirmation.decide(request.pk, approve=True, by="ana")  # too late: nothing runs
    assert selectors.alarm()["armed"] is False
    assert "not approved" in Event.objects.get(action="tool.call").after["confirmation"]


def test_a_cancelled_call_withdraws_its_request(home):
    async def scenario():
        task = asyncio.ensure_future(call_tool(*ARM, ToolContext(caller=AGENT)))
        for _ in range(100):
            await asyncio.sleep(0.05)
            if await asyncio.to_thread(confirmation.waiting_count):
                break
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    async_to_sync(scenario)()
    assert PendingConfirmation.objects.get().decision == "expired"
    assert confirmation.waiting_count() == 0


def test_bad_arguments_fail_without_asking_anyone(home):
    result = call("set_alarm_state", {"armed": "maybe"}, ToolContext(caller=AGENT))
    assert result.is_error and "armed" in result.as_mcp()["content"][0]["text"]
    assert not PendingConfirmation.objects.exists()
