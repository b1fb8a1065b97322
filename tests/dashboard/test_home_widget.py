"""The home view for MCP Apps hosts (issue 28): the server advertises the extension, the view
is a `ui://` resource of the extension's MIME type, small and self-contained, and `show_home`
names it and answers what it shows, through the same scopes as every other tool."""

from __future__ import annotations

import re

from mcp_endpoint.engine import jsonrpc
from mcp_endpoint.engine.registry import ToolRegistry
from tests.mcp_endpoint.test_mcp_engine import run
from tests.mcp_helpers import Peer

VIEW = "ui://homehub/home"
MIME = "text/html;profile=mcp-app"


def test_the_server_advertises_the_extension_and_show_home_names_its_view(home):
    async def scenario():
        peer = Peer(scopes={"read"})
        opened = await peer.initialize()
        return opened["result"], (await peer.request("tools/list"))["result"]["tools"]

    opened, tools = run(scenario)
    assert opened["capabilities"]["extensions"]["io.modelcontextprotocol/ui"] == {"mimeTypes": [MIME]}
    show_home = next(t for t in tools if t["name"] == "show_home")
    assert show_home["_meta"] == {"ui": {"resourceUri": VIEW}}
    assert show_home["annotations"]["readOnlyHint"] is True
    # Seed 000's tools stay exactly as the seed writes them: no view on them.
    assert all("_meta" not in t for t in tools if t["name"] == "get_all_states")


def test_the_view_is_listed_and_read_as_a_self_contained_mcp_app(home):
    async def scenario():
        peer = Peer(scopes={"read"})
        await peer.initialize()
        listed = (await peer.request("resources/list"))["result"]["resources"]
        return listed, (await peer.request("resources/read", {"uri": VIEW}))["result"]

    listed, read = run(scenario)
    entry = next(r for r in listed if r["uri"] == VIEW)
    assert entry["mimeType"] == MIME
    (contents,) = read["contents"]
    assert contents["uri"] == VIEW and contents["mimeType"] == MIME
    assert contents["_meta"] == {"ui": {"prefersBorder": True}}  # and no CSP domains: nothing outside
    html = contents["text"]
    assert html.startswith("<!doctype html>") and len(html.encode()) < 300_000
    # No outside loads: no script or style or image from a URL, no fetch of its own.
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert "fetch(" not in html and "XMLHttpRequest" not in html and "WebSocket" not in html


def test_show_home_answers_the_rooms_lights_alarm_and_presence(home):
    async def scenario():
        peer = Peer(scopes={"read"})
        await peer.initialize()
        return (await peer.call("show_home", {}))["result"]

    result = run(scenario)
    assert result["isError"] is False
    shown = result["structuredContent"]
    assert shown["alarm"] == {"armed": False}
    assert shown["presence"]["present"] in (True, False)
    lights = {light["name"] for room in shown["rooms"] for light in room["lights"]}
    lights |= {light["name"] for light in shown["elsewhere"]["lights"]}
    assert {"salon", "cocina", "dormitorio", "bano", "garage"} <= lights


def test_without_the_read_scope_there_is_neither_view_nor_tool(home):
    async def scenario():
        peer = Peer(scopes={"fel"})
        await peer.initialize()
        return (
            (await peer.request("resources/read", {"uri": VIEW})),
            (await peer.call("show_home", {})),
        )

    read, called = run(scenario)
    assert read["error"]["code"] == jsonrpc.INVALID_PARAMS
    assert called["error"]["code"] == jsonrpc.FORBIDDEN
    assert called["error"]["data"] == {"requiredScope": "read"}


def test_a_server_whose_apps_declare_no_ui_advertises_only_the_engines_own_extensions(db):
    async def scenario():
        return (await Peer(tools=ToolRegistry()).initialize())["result"]["capabilities"]

    # The tasks extension is the engine's own; the MCP Apps one only where an app declares it.
    assert set(run(scenario)["extensions"]) == {"io.modelcontextprotocol/tasks"}
