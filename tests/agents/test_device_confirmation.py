"""A device's tool marked destructive waits for a person (issue #25), whichever door and hub
process the call comes by: over REST a call not confirmed answers 403 (as PATCH /api/alarm
does); and a hub process whose view of devices lags (the device just connected to another
process) judges the tool the call reaches once routed, instead of finding nothing to judge
and running it unasked. Live hubs, a simulated device with a door, the owner deciding on
the hub."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest
from asgiref.sync import async_to_sync

from devices.agents import selectors
from devices.xiaozhi.simulator import FirmwareTool, SimulatedDevice, firmware_tools
from mcp_endpoint.controls import confirmation
from mcp_endpoint.engine.pipeline import NotConfirmed, call_tool
from mcp_endpoint.engine.tools import Caller, ToolContext
from mcp_endpoint.models import PendingConfirmation
from tests.devices_support import eventually, hub, new_device
from tests.hub_support import running_hub
from tests.mcp_endpoint.test_mcp_http import INIT, post, result_of
from tests.mcp_helpers import call

pytestmark = [pytest.mark.live, pytest.mark.timeout(180)]
MAC = "aa:bb:cc:00:00:25"
DOOR = "self.door.open"
OPEN_DOOR = {"agent_id": MAC, "tool": DOOR, "arguments": {"who": "courier"}}


def door_device(base: str, opened: list[dict]) -> SimulatedDevice:
    """A device whose door tool its firmware marks destructive; `opened` gets each opening."""

    def open_door(state, args: dict) -> bool:
        opened.append(args)
        return True

    door = FirmwareTool(
        DOOR,
        "Opens the front door",
        {"who": {"type": "string"}},
        open_door,
        annotations={"destructiveHint": True},
    )
    return new_device(base, MAC, tools=[*firmware_tools(), door])


def online_with_door() -> bool:
    row = selectors.agent(MAC)
    return bool(row and row["online"] and selectors.agent_tool(MAC, DOOR))


@contextmanager
def owner_deciding(approve: bool, times: int = 1) -> Iterator[list[int]]:
    """The owner, on the hub, answers the first `times` requests that wait; their ids."""
    decided: list[int] = []
    stop = threading.Event()

    def answer() -> None:
        while not stop.is_set() and len(decided) < times:
            for waiting in confirmation.open_requests():
                if confirmation.decide(waiting.pk, approve=approve, by="ana"):
                    decided.append(waiting.pk)
            time.sleep(0.05)

    thread = threading.Thread(target=answer)
    thread.start()
    try:
        yield decided
    finally:
        stop.set()
        thread.join()


def rest_call(base: str, token: str) -> httpx.Response:
    return httpx.post(
        f"{base}/api/agents/{MAC}/tools/{DOOR}/call",
        json={"arguments": {"who": "courier"}},
        headers={"authorization": f"Bearer {token}"},
        timeout=30,
    )


def test_a_rest_device_call_not_confirmed_answers_403(live_env, make_token):
    token = make_token(name="integrator", scopes=("read", "devices"))
    opened: list[dict] = []
    with hub(live_env, MCP_CONFIRMATION_SECONDS="1") as base:
        device = door_device(base, opened)

        async def scenario():
            await device.connect()
            await eventually(lambda: asyncio.to_thread(online_with_door), timeout=10)
            refused = await asyncio.to_thread(rest_call, base, token)
            with owner_deciding(True) as decided:
                approved = await asyncio.to_thread(rest_call, base, token)
            await device.close()
            return refused, approved, decided

        refused, approved, decided = async_to_sync(scenario)()
    assert refused.status_code == 403
    assert "needs a person's confirmation" in refused.json()["detail"]
    assert "not approved on the dashboard within 1 s" in refused.json()["detail"]
    assert approved.status_code == 200 and approved.json()["isError"] is False
    assert opened == [{"who": "courier"}]  # once: the approved call
    row = PendingConfirmation.objects.get(pk=decided[0])
    assert row.arguments == {"who": "courier"} and row.consumed_at is not None
    assert row.tool.endswith("__self_door_open") and row.interface == "rest"


def test_a_process_whose_view_lags_judges_the_device_tool_it_reaches(live_env, settings):
    """This test's own process plays the hub process whose view lags: its gateway never heard
    of the device, which is connected to a live hub; the call is routed there from the database
    (as a process that missed the announcement routes it), and waits for the owner."""
    settings.MCP_CONFIRMATION_SECONDS = 1
    opened: list[dict] = []
    agent = Caller(actor="assistant", interface="mcp-http", audited=True, confirms=True)
    with hub(live_env) as base:
        device = door_device(base, opened)

        async def scenario():
            await device.connect()
            await eventually(lambda: asyncio.to_thread(online_with_door), timeout=10)
            refused = await call_tool("call_agent_tool", OPEN_DOOR, ToolContext(caller=agent))
            await device.close()
            return refused

        refused = async_to_sync(scenario)()
    assert refused.is_error and isinstance(refused.reason, NotConfirmed), refused.text
    assert "not approved on the dashboard within 1 s" in refused.text
    assert opened == []
    assert PendingConfirmation.objects.get().arguments == {"who": "courier"}


@pytest.mark.parametrize("layer", ["database", "redis"])
def test_two_processes_a_device_tool_never_runs_unasked_on_the_lagging_one(
    live_env, make_token, request, layer
):
    """Two live hubs over one database (and the database channel layer, or Redis): the device
    connects to `far` again and again while an LLM calls its door through `call_agent_tool` on
    `near`, whose view lags each connection by a feed round. No call runs without the owner;
    the one the owner approves runs once."""
    env = dict(live_env)
    if layer == "redis":
        env["REDIS_URL"] = request.getfixturevalue("redis_url")
    token = make_token(name="assistant")
    opened: list[dict] = []
    answers: list[dict] = []
    settings = {"MCP_RATE_LIMIT": "0", "MCP_CONFIRMATION_SECONDS": "1"}
    with running_hub(env, **settings) as near, running_hub(env, **settings) as far:
        sessions = [post(near.base, INIT, token).headers["mcp-session-id"] for _ in range(4)]
        device = door_device(far.base, opened)

        def open_the_door(session: str) -> dict:
            return result_of(post(near.base, call("call_agent_tool", OPEN_DOOR), token, session))

        def keep_calling(session: str, until: threading.Event) -> None:
            while not until.is_set():
                answers.append(open_the_door(session))

        async def scenario() -> dict:
            for _ in range(3):  # each connection opens a new window in near's view
                reached = threading.Event()
                callers = [asyncio.to_thread(keep_calling, s, reached) for s in sessions]
                calling = asyncio.gather(*callers)
                await asyncio.sleep(0.3)
                await device.connect()
                await eventually(lambda: asyncio.to_thread(online_with_door), timeout=10)
                await asyncio.sleep(1.5)  # the calls in flight reach the door, or wait for the owner
                reached.set()
                await calling
                await device.close()
                await eventually(lambda: asyncio.to_thread(lambda: not online_with_door()), timeout=10)
            await device.connect()
            await eventually(lambda: asyncio.to_thread(online_with_door), timeout=10)
            with owner_deciding(True):
                approved = await asyncio.to_thread(open_once_near_sees_it, sessions[0])
            await device.close()
            return approved

        def open_once_near_sees_it(session: str) -> dict:
            """`near` may still miss the device's last connection, or its tools, for a feed round:
            its answer is then "offline" or "no tool" (nothing ran, nobody was asked): call
            again."""
            deadline = time.monotonic() + 10
            while True:
                answer = open_the_door(session)
                text = answer["content"][0]["text"]
                if not ("is offline" in text or "has no tool" in text) or time.monotonic() > deadline:
                    return answer
                time.sleep(0.2)

        approved = async_to_sync(scenario)()

    texts = [a["content"][0]["text"] for a in answers]
    waited = [t for t in texts if "needs a person's confirmation" in t]
    assert waited, texts  # calls did reach the device's tool while it was online
    assert all(a["isError"] for a in answers), [
        t for a, t in zip(answers, texts, strict=True) if not a["isError"]
    ]
    assert opened == [{"who": "courier"}], (approved, texts)  # only the approved call ran
    assert approved["isError"] is False
