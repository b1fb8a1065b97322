"""ESP32 devices at /ws/devices/ against a live daphne: hello, discovery, quirks, refusals."""

import asyncio
import json

import httpx
import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.core.management import call_command
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from audit.models import Event
from devices.agents.models import Agent, AgentTool
from devices.agents.services import hash_device_token, register_agent
from devices.xiaozhi.management.commands.simulate_device import Command as SimulateDevice
from devices.xiaozhi.simulator import SimulatedDevice
from tests.devices_support import device_url, eventually, hub, new_device
from tests.hub_support import log_in_over_http

pytestmark = pytest.mark.live
MAC = "aa:bb:cc:00:00:01"


@sync_to_async
def tool_rows(agent_id: str) -> list[tuple[str, bool]]:
    return list(
        AgentTool.objects.filter(agent__agent_id=agent_id).order_by("name").values_list("name", "available")
    )


@sync_to_async
def events(action: str) -> list[Event]:
    return list(Event.objects.filter(action=action).order_by("id"))


def test_hello_session_and_discovery_over_pages(live_env):
    with hub(live_env) as base:
        device = new_device(base, MAC, page_bytes=700)

        async def scenario():
            session = await device.connect()
            tools = await eventually(lambda: tool_rows(MAC))
            await device.close()
            await eventually(lambda: events("agent.disconnect"))
            return session, tools, await tool_rows(MAC)

        session, online_tools, offline_tools = async_to_sync(scenario)()

    assert len(session) == 32
    listing = [p for p in device.received if p.get("method") == "tools/list"]
    assert len(listing) >= 3
    names = [t.name for t in device.tools]
    cursors = [p["params"]["cursor"] for p in listing]
    assert cursors[0] == "" and [names.index(c) for c in cursors[1:]] == sorted(
        {names.index(c) for c in cursors[1:]}
    )
    assert all(type(p["id"]) is int for p in device.received if "id" in p)
    assert (
        device.received[0]["method"] == "initialize"
        and "vision" not in device.received[0]["params"]["capabilities"]
    )
    assert [name for name, _ in online_tools] == sorted(t.name for t in device.tools)
    assert all(available for _, available in online_tools)
    assert offline_tools == [(name, False) for name, _ in online_tools]  # known, marked unavailable
    agent = Agent.objects.get(agent_id=MAC)
    assert agent.server_info == {"name": "homehub-sim", "version": "1.9.0"} and not agent.online
    connect_event = Event.objects.get(action="agent.connect")
    assert (
        connect_event.after["session_id"] == session and connect_event.after["client_id"] == device.client_id
    )


def test_junk_frames_are_ignored_and_notifications_recorded(live_env):
    with hub(live_env, DEVICE_MAX_MESSAGE_BYTES="4096") as base:
        device = new_device(base, MAC)

        async def scenario():
            await device.connect()
            for frame in [
                b"\x01\x02opus",
                "{not json",
                json.dumps({"type": "listen", "state": "start", "mode": "auto"}),
                json.dumps({"type": "abort"}),
                json.dumps({"type": "mcp", "payload": {"jsonrpc": "2.0", "id": "x", "result": {}}}),
                json.dumps(
                    {
                        "type": "mcp",
                        "payload": {"jsonrpc": "2.0", "method": "big", "params": {"p": "x" * 5000}},
                    }
                ),
            ]:
                await device.send_frame(frame)
            await device.notify("notifications/state_changed", {"newState": "idle", "oldState": "connecting"})
            recorded = await eventually(lambda: events("agent.notification"))
            still_open = not device.closed.is_set()
            await device.send_frame("x" * (1024 * 1024 + 1))  # past daphne's own limit
            await asyncio.wait_for(device.closed.wait(), 5)
            return recorded, still_open

        recorded, still_open = async_to_sync(scenario)()

    assert still_open
    assert [e.after for e in recorded] == [
        {"method": "notifications/state_changed", "params": {"newState": "idle", "oldState": "connecting"}}
    ]


def test_bad_credentials_are_refused_before_accept(live_env):
    register_agent(MAC, transport="ws", actor="test", interface="system")
    with hub(live_env) as base:
        attempts = [
            {"Device-Id": MAC, "Authorization": "Bearer wrong"},
            {"Device-Id": MAC},
            {"Device-Id": "ff:ff:ff:ff:ff:ff", "Authorization": "Bearer whatever"},
            {"Authorization": "Bearer whatever"},
        ]

        async def scenario():
            statuses = []
            for headers in attempts:
                try:
                    async with connect(device_url(base), additional_headers=headers) as ws:
                        await ws.recv()
                    statuses.append("accepted")
                except InvalidStatus as exc:
                    statuses.append(exc.response.status_code)
                except ConnectionClosed:
                    statuses.append("closed")
            return statuses

        assert async_to_sync(scenario)() == [403, 403, 403, 403]
    assert not Agent.objects.filter(agent_id="ff:ff:ff:ff:ff:ff").exists()


def admin_approve(base: str, agent_id: str) -> int:
    """Log in to the hub's admin and run the "approve" action on one agent."""
    with httpx.Client(base_url=base, timeout=10) as browser:
        log_in_over_http(browser, "boss", "pw-for-tests-only", login="/admin/login/")
        csrf = browser.cookies["csrftoken"]
        pk = Agent.objects.get(agent_id=agent_id).pk
        done = browser.post(
            "/admin/agents/agent/",
            data={"csrfmiddlewaretoken": csrf, "action": "approve", "_selected_action": [pk], "index": 0},
        )
        return done.status_code


def test_unknown_devices_wait_for_approval_when_allowed(live_env, django_user_model):
    django_user_model.objects.create_superuser("boss", "boss@example.com", "pw-for-tests-only")
    with hub(live_env, DEVICES_ACCEPT_UNKNOWN="1") as base:
        device = SimulatedDevice(device_url(base), "new-speaker", "a-token-of-its-own")

        async def scenario():
            await device.connect()
            await asyncio.sleep(0.3)
            before = list(device.received)
            status = await sync_to_async(admin_approve)(base, "new-speaker")
            tools = await eventually(lambda: tool_rows("new-speaker"))
            await device.close()
            return before, status, tools

        before, status, tools = async_to_sync(scenario)()

    assert before == []  # no discovery while pending
    assert status in (200, 302)
    assert len(tools) == len(device.tools)
    agent = Agent.objects.get(agent_id="new-speaker")
    assert agent.approved and agent.token_hash == hash_device_token("a-token-of-its-own")
    assert Event.objects.filter(action="agent.approve", actor="boss", interface="admin").exists()


def test_register_agent_prints_the_token_last_and_stores_its_hash(db, capsys):
    call_command("register_agent", "esp-kitchen", "--transport", "ws", "--name", "Kitchen")
    token = capsys.readouterr().out.strip().splitlines()[-1]
    agent = Agent.objects.get(agent_id="esp-kitchen")
    assert (
        agent.name == "Kitchen"
        and agent.token_hash == hash_device_token(token)
        and token not in agent.token_hash
    )
    call_command("register_agent", "esp-kitchen", "--transport", "ws")
    assert Agent.objects.get(agent_id="esp-kitchen").token_hash != agent.token_hash  # re-registering rotates
    call_command("register_agent", "mqtt-1", "--transport", "mqtt")
    assert Agent.objects.get(agent_id="mqtt-1").token_hash == ""


def test_every_device_token_can_be_typed_on_the_simulators_command_line(db):
    parser = SimulateDevice().create_parser("manage.py", "simulate_device")
    for _ in range(200):  # a bare random token started with "-" once in 64
        token = register_agent("esp-cli", transport="ws", actor="test", interface="system")[1]
        assert parser.parse_args(["esp-cli", token]).token == token
