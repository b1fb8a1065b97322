"""Dangerous tool calls wait for a person on the hub (issues #19, #25): which calls (per call:
disarming waits, arming does not), each way a person answers (the dashboard's Approve and Deny,
no answer in time), that a token holder's own answer confirms nothing unless the owner says the
client's confirmation is enough for that tool, and that a stateless client's answer counts only
as the answer to the question the hub asked, once. The calls run through the one pipeline, as
every door makes them; the live tests (test_confirmation_live.py) make them over HTTP with the
SDK."""

from __future__ import annotations

import asyncio
import threading
import time
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.core import signing
from django.utils import timezone
from pydantic import BaseModel

from audit.models import Event
from devices.home import selectors, services
from mcp_endpoint.controls import confirmation
from mcp_endpoint.engine.input_rounds import SALT
from mcp_endpoint.engine.pipeline import NotConfirmed, call_tool
from mcp_endpoint.engine.registry import ToolRegistry, ToolSettings, registry
from mcp_endpoint.engine.session import ServerSession
from mcp_endpoint.engine.tools import Caller, ClientRequest, ToolContext
from mcp_endpoint.models import PendingConfirmation
from tests.mcp_helpers import tool_on

AGENT = Caller(actor="assistant", interface="mcp-http", audited=True, rate_key="k1", confirms=True)
PERSON = Caller(actor="ana", interface="dashboard", audited=True)
STDIO = Caller(actor="root@stdio", interface="mcp-stdio")
DISARM = ("set_alarm_state", {"armed": False})
ARM = ("set_alarm_state", {"armed": True})
ACCEPT = {"action": "accept", "content": {"confirm": True}}
STATELESS_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
}

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def armed(home):
    services.set_alarm_state(True, actor="test", interface="system")


@pytest.fixture
def client_confirms_the_alarm():
    """The owner marked set_alarm_state "the client's confirmation is enough"."""
    registry.apply_settings({"set_alarm_state": ToolSettings(client_confirms=True)})
    yield
    registry.apply_settings({})


class Nothing(BaseModel):
    pass


def elicitation_client(answer: dict[str, Any], asked: list[ClientRequest], caps=None) -> ToolContext:
    async def send_request(requests):
        asked.extend(requests)
        return [answer for _ in requests]

    return ToolContext(
        caller=AGENT, send_request=send_request, client_capabilities=caps or {"elicitation": {}}
    )


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
    alarm = registry.get("set_alarm_state")
    light = registry.get("set_light_state")
    assert alarm is not None and light is not None
    assert confirmation.required(alarm, {"armed": False}, AGENT)
    assert not confirmation.required(alarm, {"armed": True}, AGENT)  # arming is the safe direction
    assert not confirmation.required(alarm, {"armed": False}, PERSON)  # their click is the confirmation
    assert not confirmation.required(alarm, {"armed": False}, STDIO)
    assert not confirmation.required(light, {"name": "salon", "on": True}, AGENT)
    registry.apply_settings({"set_light_state": ToolSettings(needs_confirmation=True)})  # the owner's mark
    try:
        marked = registry.get("set_light_state")
        assert marked is not None and confirmation.required(marked, {}, AGENT)
    finally:
        registry.apply_settings({})


def test_arming_over_a_token_runs_at_once_and_disarming_waits(home, settings):
    settings.MCP_CONFIRMATION_SECONDS = 0.5
    started = time.monotonic()
    armed = call(*ARM, ToolContext(caller=AGENT))
    assert not armed.is_error and time.monotonic() - started < 0.4
    assert selectors.alarm()["armed"] is True and not PendingConfirmation.objects.exists()
    disarmed = call(*DISARM, ToolContext(caller=AGENT))
    assert disarmed.is_error and "not approved on the dashboard within 0.5 s" in disarmed.text
    assert selectors.alarm()["armed"] is True


def test_a_tool_running_another_on_the_callers_behalf_has_that_call_confirmed(home, settings):
    settings.MCP_CONFIRMATION_SECONDS = 0.4
    tools = ToolRegistry()
    ran: list[str] = []

    @tool_on(tools, scope="control", destructive=True)
    def wipe(args: Nothing, ctx: ToolContext) -> dict:
        """Wipes the device"""
        ran.append("wipe")
        return {"ok": True}

    @tool_on(tools, scope="control")
    async def call_other(args: Nothing, ctx: ToolContext) -> dict:
        """Calls another tool, as the device gateway calls a device's"""
        target = tools.get("wipe")
        assert target is not None
        await ctx.confirm(target, {})
        return (await target.call({}, ctx)).structured

    refused = async_to_sync(call_tool)("call_other", {}, ToolContext(caller=AGENT), tools=tools)
    assert refused.is_error and isinstance(refused.reason, NotConfirmed) and ran == []
    assert "'wipe' needs a person's confirmation" in refused.text
    decided: list[bool] = []
    owner = owner_answers(True, decided)
    settings.MCP_CONFIRMATION_SECONDS = 10
    done = async_to_sync(call_tool)("call_other", {}, ToolContext(caller=AGENT), tools=tools)
    owner.join()
    assert not done.is_error and ran == ["wipe"] and done.confirmation == "approved by ana on the dashboard"
    # Outside the pipeline nobody can be asked: refused, never run unasked.
    with pytest.raises(Exception, match="only through the tool-call pipeline"):
        async_to_sync(ToolContext(caller=AGENT).confirm)(tools.get("wipe"), {})


def test_the_clients_own_accept_confirms_nothing(armed, settings):
    """A token holder declaring elicitation answers for itself: the hub does not ask it."""
    settings.MCP_CONFIRMATION_SECONDS = 0.4
    asked: list[ClientRequest] = []
    result = call(*DISARM, elicitation_client(ACCEPT, asked))
    assert result.is_error and isinstance(result.reason, NotConfirmed)
    assert asked == [] and selectors.alarm()["armed"] is True
    assert PendingConfirmation.objects.get().decision == "expired"


def test_confirmed_in_the_client_when_the_owner_says_it_is_enough(armed, client_confirms_the_alarm):
    asked: list[ClientRequest] = []
    result = call(*DISARM, elicitation_client(ACCEPT, asked))
    assert not result.is_error
    assert selectors.alarm()["armed"] is False
    (question,) = asked
    assert question.method == "elicitation/create" and question.params["mode"] == "form"
    assert "assistant (through mcp-http) asks to run set_alarm_state" in question.params["message"]
    assert '{"armed": false}' in question.params["message"]
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
def test_refused_by_elicitation(armed, client_confirms_the_alarm, answer, how):
    result = call(*DISARM, elicitation_client(answer, []))
    assert result.is_error and isinstance(result.reason, NotConfirmed)
    assert result.as_mcp()["content"][0]["text"].endswith(how)
    assert not Event.objects.filter(action="alarm.set", actor="assistant").exists()
    assert Event.objects.get(action="tool.call").after["confirmation"] == how


def test_approved_on_the_dashboard(armed):
    decided: list[bool] = []
    owner = owner_answers(True, decided)
    result = call(*DISARM, ToolContext(caller=AGENT))  # a client that cannot ask its user
    owner.join()
    assert decided == [True] and not result.is_error
    assert selectors.alarm()["armed"] is False
    request = PendingConfirmation.objects.get()
    assert (request.decision, request.decided_by, request.actor, request.interface) == (
        "approved",
        "ana",
        "assistant",
        "mcp-http",
    )
    assert "set_alarm_state" in request.summary and request.arguments == {"armed": False}
    assert request.arguments_hash == confirmation.arguments_hash({"armed": False})
    assert request.consumed_at is not None  # the approval went to this call
    event = Event.objects.get(action="tool.call")
    assert event.after["confirmation"] == "approved by ana on the dashboard"


def test_denied_on_the_dashboard(armed):
    decided: list[bool] = []
    owner = owner_answers(False, decided)
    result = call(*DISARM, ToolContext(caller=AGENT))
    owner.join()
    assert decided == [True] and result.is_error
    assert "denied by ana on the dashboard" in result.as_mcp()["content"][0]["text"]
    assert selectors.alarm()["armed"] is True
    assert PendingConfirmation.objects.get().decision == "denied"
    assert Event.objects.get(action="tool.call").after["confirmation"] == "denied by ana on the dashboard"


def test_no_answer_in_time_refuses_and_the_request_lapses(armed, settings):
    settings.MCP_CONFIRMATION_SECONDS = 0.4
    started = time.monotonic()
    result = call(*DISARM, ToolContext(caller=AGENT))
    assert result.is_error and time.monotonic() - started < 3
    assert "not approved on the dashboard within 0.4 s" in result.as_mcp()["content"][0]["text"]
    request = PendingConfirmation.objects.get()
    assert request.decision == "expired"
    assert not confirmation.decide(request.pk, approve=True, by="ana")  # too late: nothing runs
    assert selectors.alarm()["armed"] is True
    assert "not approved" in Event.objects.get(action="tool.call").after["confirmation"]


def test_requests_ended_a_week_ago_go_as_new_ones_are_made(armed, settings):
    settings.MCP_CONFIRMATION_SECONDS = 0.2
    old = PendingConfirmation.objects.create(
        tool="set_alarm_state",
        summary="x",
        actor="assistant",
        interface="mcp-http",
        expires_at=timezone.now() - confirmation.KEEP_ENDED - timedelta(minutes=1),
    )
    recent = PendingConfirmation.objects.create(
        tool="set_alarm_state",
        summary="x",
        actor="assistant",
        interface="mcp-http",
        expires_at=timezone.now() - timedelta(days=1),
    )
    assert call(*DISARM, ToolContext(caller=AGENT)).is_error  # a new request, which lapses
    kept = set(PendingConfirmation.objects.values_list("pk", flat=True))
    assert recent.pk in kept and old.pk not in kept and len(kept) == 2


def test_an_approval_is_consumed_by_the_call_it_was_made_for(armed):
    row = PendingConfirmation.objects.create(
        tool="set_alarm_state",
        summary="x",
        arguments={"armed": False},
        arguments_hash=confirmation.arguments_hash({"armed": False}),
        actor="assistant",
        interface="mcp-http",
        expires_at=timezone.now() + timedelta(seconds=60),
    )
    PendingConfirmation.objects.filter(pk=row.pk).update(decision="approved", decided_by="ana")
    consume = async_to_sync(confirmation._consume)
    other = confirmation.arguments_hash({"armed": False, "extra": 1})
    assert not consume(row.pk, "set_alarm_state", other)  # not these arguments
    assert not consume(row.pk, "set_light_state", row.arguments_hash)  # not this tool
    assert consume(row.pk, "set_alarm_state", row.arguments_hash)
    assert not consume(row.pk, "set_alarm_state", row.arguments_hash)  # once


def test_a_cancelled_call_withdraws_its_request(armed):
    async def scenario():
        task = asyncio.ensure_future(call_tool(*DISARM, ToolContext(caller=AGENT)))
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


# --- stateless (2026-07-28): an answer counts only as the answer to the hub's question --------


class StatelessClient:
    """A token holder's stateless requests to a session of the engine (as /mcp serves them)."""

    def __init__(self) -> None:
        self.session = ServerSession(AGENT, self._sent, tools=registry)

    async def _sent(self, message: dict[str, Any]) -> None:
        return None

    def call(self, arguments: dict, *, tool: str = "set_alarm_state", **params: Any) -> dict:
        message = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments, "_meta": STATELESS_META, **params},
        }
        return async_to_sync(self.session.handle)(message)


def test_a_first_stateless_request_carrying_its_own_answer_never_disarms(armed, settings):
    settings.MCP_CONFIRMATION_SECONDS = 0.4
    client = StatelessClient()
    # The tool is not marked: the answer is no one's, and the call waits for the owner.
    answered = client.call({"armed": False}, inputResponses={"confirm": ACCEPT, "1": ACCEPT})
    assert answered["result"]["isError"] is True
    assert "not approved on the dashboard" in answered["result"]["content"][0]["text"]
    assert selectors.alarm()["armed"] is True


def test_a_stateless_answer_is_bound_to_the_question_the_arguments_and_used_once(
    armed, client_confirms_the_alarm
):
    client = StatelessClient()
    # Answers sent unasked, under any key the client could guess: asked, never taken.
    guesses = {f"confirm-{n}": ACCEPT for n in range(1, 50)} | {"confirm": ACCEPT}
    first = client.call({"armed": False}, inputResponses=guesses)["result"]
    assert first["resultType"] == "input_required" and selectors.alarm()["armed"] is True
    (key,) = first["inputRequests"]
    assert first["inputRequests"][key]["params"]["mode"] == "form"
    state = first["requestState"]

    forged = client.call({"armed": False}, inputResponses={key: ACCEPT}, requestState=state + "x")
    assert forged["error"]["code"] == -32602
    kept = signing.loads(state, salt=SALT)
    kept["asked"] = ["confirm-999"]
    unsigned = signing.dumps(kept, salt="another salt", compress=True)
    assert client.call({"armed": False}, requestState=unsigned)["error"]["code"] == -32602

    done = client.call({"armed": False}, inputResponses={key: ACCEPT}, requestState=state)["result"]
    assert done["isError"] is False and selectors.alarm()["armed"] is False
    services.set_alarm_state(True, actor="test", interface="system")
    replayed = client.call({"armed": False}, inputResponses={key: ACCEPT}, requestState=state)["result"]
    assert replayed["resultType"] == "input_required" and key not in replayed["inputRequests"]
    assert selectors.alarm()["armed"] is True  # the answer was used once
    assert PendingConfirmation.objects.filter(kind="client", consumed_at__isnull=False).count() == 1
    assert confirmation.waiting_count() == 0  # the client's questions are not the owner's requests


def test_a_stateless_answer_does_not_confirm_other_arguments(home):
    """The owner marked set_light_state as needing a person, whose answer in the client is
    enough: the answer given for one light does not switch another."""
    marks = ToolSettings(needs_confirmation=True, client_confirms=True)
    registry.apply_settings({"set_light_state": marks})
    try:
        client = StatelessClient()
        salon = {"name": "salon", "on": True}
        first = client.call(salon, tool="set_light_state")["result"]
        (key,) = first["inputRequests"]
        cocina = {"name": "cocina", "on": True}
        other = client.call(
            cocina, tool="set_light_state", inputResponses={key: ACCEPT}, requestState=first["requestState"]
        )["result"]
        assert other["resultType"] == "input_required" and key not in other["inputRequests"]
        assert selectors.list_lights_on()["on"] == []
        done = client.call(
            salon, tool="set_light_state", inputResponses={key: ACCEPT}, requestState=first["requestState"]
        )["result"]
        assert done["isError"] is False and selectors.list_lights_on()["on"] == ["salon"]
    finally:
        registry.apply_settings({})


def url_client(answer: dict[str, Any], asked: list[ClientRequest], notified: list) -> ToolContext:
    async def send_request(requests):
        asked.extend(requests)
        return [answer for _ in requests]

    async def send_notification(method, params):
        notified.append((method, params))

    return ToolContext(
        caller=AGENT,
        send_request=send_request,
        send_notification=send_notification,
        client_capabilities={"elicitation": {"form": {}, "url": {}}},
    )


def test_a_url_mode_client_is_handed_the_hubs_page_and_the_decision_stays_on_the_hub(armed, settings):
    settings.HUB_URL = "https://hub.example/"
    asked: list[ClientRequest] = []
    notified: list = []
    decided: list[bool] = []
    owner = owner_answers(True, decided)
    result = call(*DISARM, url_client({"action": "accept"}, asked, notified))
    owner.join()
    assert not result.is_error and selectors.alarm()["armed"] is False
    request = PendingConfirmation.objects.get()
    (question,) = asked
    assert question.params["mode"] == "url"
    assert question.params["url"] == f"https://hub.example/requests/{request.pk}/"
    assert notified == [
        ("notifications/elicitation/complete", {"elicitationId": question.params["elicitationId"]})
    ]


def test_a_url_mode_client_declining_the_page_refuses_the_call(armed, settings):
    settings.HUB_URL = "https://hub.example"
    result = call(*DISARM, url_client({"action": "decline"}, [], []))
    assert result.is_error and "declined in the client" in result.text
    assert selectors.alarm()["armed"] is True
    assert PendingConfirmation.objects.get().decision == "expired"


def test_tool_options_are_declared_once_and_checked():
    tools = ToolRegistry()
    with pytest.raises(TypeError, match="unknown tool options: stands_for"):
        tool_on(tools, scope="control", stands_for=lambda arguments: None)(lambda args, ctx: None)
    with pytest.raises(ValueError, match="dangerous_when is for a destructive tool"):

        @tool_on(tools, scope="control", dangerous_when=lambda args: True)
        def harmless(args: Nothing, ctx: ToolContext) -> dict:
            """Does nothing"""
            return {}


def test_a_dangerous_call_made_a_task_still_waits_for_the_owner(home):
    """A call answered with an MCP task (tasks extension) passes the same gate: the task shows
    `working` while the owner decides, and a denial is the task's `isError` result."""
    reg = ToolRegistry()
    ran: list[bool] = []

    @tool_on(reg, scope="control", destructive=True, task_support="optional")
    def wipe(args: Nothing, ctx: ToolContext) -> dict:
        ran.append(True)
        return {}

    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
    }
    session = ServerSession(AGENT, lambda message: asyncio.sleep(0), tools=reg)

    async def request(method: str, **params) -> dict:
        message = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": meta}}
        return (await session.handle(message))["result"]

    async def scenario():
        created = await request("tools/call", name="wipe", arguments={})
        while not await PendingConfirmation.objects.filter(tool="wipe").aexists():
            await asyncio.sleep(0.05)
        waiting = await request("tasks/get", taskId=created["taskId"])
        request_pk = (await PendingConfirmation.objects.aget(tool="wipe")).pk
        await asyncio.to_thread(confirmation.decide, request_pk, approve=False, by="ana")
        for _ in range(200):
            task = await request("tasks/get", taskId=created["taskId"])
            if task["status"] != "working":
                return waiting, task
            await asyncio.sleep(0.05)
        raise AssertionError("the task never finished")

    waiting, task = async_to_sync(scenario)()
    assert waiting["status"] == "working" and not ran
    assert task["status"] == "completed" and task["result"]["isError"] is True
    assert "denied by ana on the dashboard" in task["result"]["content"][0]["text"]
    assert not ran
