"""Both stdio protocols as real subprocesses, and the official MCP SDK as the client."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from asgiref.sync import async_to_sync

from audit.models import Event
from devices.home.models import Light

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.live
HOME_TOOLS = {
    "get_presence",
    "get_alarm_status",
    "list_lights_on",
    "set_light_state",
    "set_alarm_state",
    "get_all_states",
}


def run_stdio(env, lines, *args, timeout=60):
    proc = subprocess.run(
        [sys.executable, "manage.py", "mcp_stdio", *args],
        input="".join(line + "\n" for line in lines),
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=timeout,
    )
    # stdout carries only protocol messages: every line is JSON.
    return proc, [json.loads(line) for line in proc.stdout.splitlines()]


def test_nothing_on_stdin_ends_the_session(live_env):
    """`manage.py mcp_stdio < /dev/null` (a client that sends nothing and closes) ends at once,
    as at the end of any input: the event loop cannot watch /dev/null, so it is read as a file."""
    proc = subprocess.run(
        [sys.executable, "manage.py", "mcp_stdio"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        cwd=ROOT,
        env=live_env,
        timeout=30,
    )
    assert proc.returncode == 0 and proc.stdout == b""


def test_seed_002_printf_initialize_and_list(live_env):
    proc, out = run_stdio(
        live_env,
        [
            '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}',
            '{"jsonrpc":"2.0","id":2,"method":"tools/list"}',
        ],
    )
    assert proc.returncode == 0
    assert [m["id"] for m in out] == [1, 2]
    assert {"protocolVersion", "serverInfo", "capabilities"} <= out[0]["result"].keys()
    tools = {t["name"]: t for t in out[1]["result"]["tools"]}
    assert tools.keys() >= HOME_TOOLS
    assert all("inputSchema" in t and "description" in t for t in tools.values())


def test_jsonrpc_stdio_survives_garbage_and_oversized_lines(live_env):
    env = {**live_env, "MCP_MAX_MESSAGE_BYTES": "2000"}
    proc, out = run_stdio(
        env,
        [
            "this is not json",
            '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}',
            '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"set_light_state","arguments":{"name":"x","on":"'
            + "a" * 5000
            + '"}}}',
            '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"set_light_state","arguments":{"name":"cocina","on":true}}}',
        ],
    )
    assert proc.returncode == 0
    assert out[0]["error"]["code"] == -32700 and out[0]["id"] is None
    assert out[1]["id"] == 1
    assert out[2]["error"]["code"] == -32600 and "2000" in out[2]["error"]["message"]
    assert out[3]["result"]["structuredContent"] == {"ok": True}
    assert Light.objects.get(name="cocina").on is True


def test_seed_000_example_session(live_env):
    proc, out = run_stdio(
        live_env,
        [
            '{"type":"call","id":1,"tool":"set_light_state","args":{"name":"salon","on":true}}',
            '{"type":"call","id":2,"tool":"get_all_states","args":{}}',
            '{"type":"call","id":3,"tool":"set_light_state","args":{"name":"inexistente","on":true}}',
            '{"type":"call","id":4,"tool":"tool_inexistente","args":{}}',
            "",
            "{not json",
            '{"type":"call","id":5,"tool":"set_light_state","args":{}}',
            '{"type":"call","id":"s-6","tool":"get_presence","args":{}}',
            '{"type":"quit"}',
            '{"type":"call","id":7,"tool":"get_presence","args":{}}',
        ],
        "--protocol",
        "simple",
    )
    assert proc.returncode == 0
    ready, *answers = out
    assert ready["type"] == "ready" and ready["version"] == "0.1.0"
    tools = {t["name"]: t for t in ready["tools"]}
    assert tools.keys() >= HOME_TOOLS
    assert set(tools["get_presence"]) == {"name", "description", "input_schema", "output_schema"}
    assert tools["get_presence"]["output_schema"]["properties"]["known_people"]["type"] == "array"
    assert answers == [
        {"type": "result", "id": 1, "ok": True, "result": {"ok": True}},
        {
            "type": "result",
            "id": 2,
            "ok": True,
            "result": {
                "lights": {
                    "salon": True,
                    "cocina": False,
                    "dormitorio": False,
                    "bano": False,
                    "garage": False,
                },
                "alarm": False,
                "presence": {"present": False, "known_people": []},
            },
        },
        {"type": "error", "id": 3, "ok": False, "error": "Luz 'inexistente' no encontrada"},
        {"type": "error", "id": 4, "ok": False, "error": "Tool 'tool_inexistente' no encontrada"},
        {
            "type": "error",
            "id": None,
            "ok": False,
            "error": "Error al parsear JSON: Expecting property name enclosed in double quotes: "
            "line 1 column 2 (char 1)",
        },
        {"type": "error", "id": 5, "ok": False, "error": "Faltan parámetros requeridos: name, on"},
        {"type": "result", "id": "s-6", "ok": True, "result": {"present": False, "known_people": []}},
    ]  # nothing after quit
    assert Event.objects.filter(interface="mcp-stdio", target="light:salon").count() == 1


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_official_sdk_client_over_stdio(live_env, mode):
    from mcp import Client, StdioServerParameters

    async def scenario():
        params = StdioServerParameters(
            command=sys.executable, args=["manage.py", "mcp_stdio"], cwd=str(ROOT), env=live_env
        )
        async with Client(params, mode=mode) as client:
            listed = await client.list_tools()
            calls = {
                "set_light_state": await client.call_tool("set_light_state", {"name": "garage", "on": True}),
                "set_alarm_state": await client.call_tool("set_alarm_state", {"armed": True}),
                "get_presence": await client.call_tool("get_presence", {}),
                "get_alarm_status": await client.call_tool("get_alarm_status", {}),
                "list_lights_on": await client.call_tool("list_lights_on", {}),
                "get_all_states": await client.call_tool("get_all_states", {}),
            }
            missing = await client.call_tool("set_light_state", {"name": "atico", "on": True})
            return listed, calls, missing

    listed, calls, missing = async_to_sync(scenario)()
    assert {t.name for t in listed.tools} >= HOME_TOOLS
    assert all(not result.is_error for result in calls.values())
    assert calls["set_light_state"].structured_content == {"ok": True}
    assert calls["get_alarm_status"].structured_content == {"armed": True}
    assert calls["list_lights_on"].structured_content == {"on": ["garage"]}
    assert calls["get_presence"].structured_content == {"present": False, "known_people": []}
    assert calls["get_all_states"].structured_content["lights"]["garage"] is True
    assert json.loads(calls["get_all_states"].content[0].text) == calls["get_all_states"].structured_content
    assert missing.is_error and "Luz 'atico' no encontrada" in missing.content[0].text
    assert Event.objects.filter(interface="mcp-stdio", action="light.set").count() == 1
