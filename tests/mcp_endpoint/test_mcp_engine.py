"""The MCP engine in-process: framing errors, both protocol eras, pagination, cancellation,
progress, logging, concurrency, scopes, and the home tools through it."""

import asyncio

import pytest
from asgiref.sync import async_to_sync
from pydantic import BaseModel

from audit.models import Event
from devices.home.models import Light
from mcp_endpoint.engine import jsonrpc
from mcp_endpoint.engine import session as engine
from mcp_endpoint.engine.registry import ToolRegistry
from mcp_endpoint.engine.tools import ToolContext
from tests.mcp_helpers import MODERN_META, Peer, tool_on


def run(coro_fn):
    """Run an async scenario from a sync test, in this thread's DB transaction."""
    return async_to_sync(coro_fn)()


class Empty(BaseModel):
    pass


class Count(BaseModel):
    n: int


def make_registry(count: int = 0) -> ToolRegistry:
    reg = ToolRegistry()
    for i in range(count):

        def handler(args: Empty, ctx: ToolContext) -> dict:
            return {}

        tool_on(reg, scope="read", name=f"tool_{i:03d}", description=f"tool {i}")(handler)
    return reg


# --- JSON-RPC framing ---------------------------------------------------------------------


def test_parse_error_has_null_id_and_session_survives():
    async def scenario():
        peer = Peer()
        await peer.session.receive('{"jsonrpc": "2.0", "id": 1, "method": ')
        await peer.session.receive('{"jsonrpc":"2.0","id":2,"method":"ping"}')
        return peer.sent

    sent = run(scenario)
    assert sent[0]["id"] is None and sent[0]["error"]["code"] == jsonrpc.PARSE_ERROR
    assert sent[1] == {"jsonrpc": "2.0", "id": 2, "result": {}}


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "1.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "id": 1, "method": 7},
        {"jsonrpc": "2.0", "id": 1.5, "method": "ping"},
        {"jsonrpc": "2.0", "id": True, "method": "ping"},
        {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": "x"},
        {"jsonrpc": "2.0"},
        42,
        "hello",
    ],
)
def test_invalid_requests_get_32600(message):
    async def scenario():
        return await Peer().session.handle(message)

    assert run(scenario)["error"]["code"] == jsonrpc.INVALID_REQUEST


def test_unknown_method_is_32601():
    async def scenario():
        peer = Peer()
        await peer.initialize()
        return await peer.request("no/such/method")

    response = run(scenario)
    assert response["error"]["code"] == jsonrpc.METHOD_NOT_FOUND
    assert "no/such/method" in response["error"]["message"]


def test_invalid_params_are_32602(home):
    async def scenario():
        peer = Peer()
        await peer.initialize()
        return [
            await peer.request("tools/call", {}),
            await peer.call("no_such_tool", {}),
            await peer.request("logging/setLevel", {"level": "loud"}),
            await peer.request("tools/list", {"cursor": "not-a-cursor"}),
        ]

    for response in run(scenario):
        assert response["error"]["code"] == jsonrpc.INVALID_PARAMS, response
    assert "no_such_tool" in run(scenario)[1]["error"]["message"]


def test_internal_error_is_32603_and_hides_details():
    class Broken:
        def tools(self):
            raise RuntimeError("secret detail")

    reg = ToolRegistry()
    reg.add_provider(Broken())

    async def scenario():
        peer = Peer(tools=reg)
        await peer.initialize()
        return await peer.request("tools/list")

    error = run(scenario)["error"]
    assert error["code"] == jsonrpc.INTERNAL_ERROR
    assert "secret" not in error["message"]


def test_notifications_and_responses_get_no_answer():
    async def scenario():
        peer = Peer()
        a = await peer.session.handle({"jsonrpc": "2.0", "method": "notifications/initialized"})
        b = await peer.session.handle({"jsonrpc": "2.0", "id": 9, "result": {}})
        return a, b, peer.sent

    assert run(scenario) == (None, None, [])


# --- handshake era ------------------------------------------------------------------------


def test_request_before_initialize_is_an_error_but_ping_works():
    async def scenario():
        peer = Peer()
        return await peer.request("tools/list"), await peer.request("ping")

    refused, ping = run(scenario)
    assert refused["error"]["code"] == jsonrpc.INVALID_REQUEST
    assert "initialize" in refused["error"]["message"]
    assert ping["result"] == {}


@pytest.mark.parametrize(
    ("asked", "answered"),
    [
        ("2024-11-05", "2024-11-05"),
        ("2025-03-26", "2025-03-26"),
        ("2025-06-18", "2025-06-18"),
        ("2025-11-25", "2025-11-25"),
        ("1999-01-01", "2025-11-25"),
    ],
)
def test_version_negotiation(asked, answered):
    async def scenario():
        return await Peer().initialize(asked)

    result = run(scenario)["result"]
    assert result["protocolVersion"] == answered
    assert result["serverInfo"]["name"] == "homehub"
    assert result["capabilities"]["tools"] == {"listChanged": True}
    assert "logging" in result["capabilities"]
    assert "get_all_states" in result["instructions"]


def test_initialize_without_params_as_seed_002_sends_it():
    async def scenario():
        return await Peer().request("initialize", {})

    assert run(scenario)["result"]["protocolVersion"] == "2025-11-25"


def test_batches_only_in_2025_03_26(home):
    batch = [
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "get_alarm_status"}},
    ]

    async def scenario(version):
        peer = Peer()
        await peer.initialize(version)
        return await peer.session.handle(batch)

    answers = async_to_sync(scenario)("2025-03-26")
    assert [a["id"] for a in answers] == [1, 2]
    assert answers[1]["result"]["structuredContent"] == {"armed": False}
    refused = async_to_sync(scenario)("2025-11-25")
    assert refused["error"]["code"] == jsonrpc.INVALID_REQUEST


# --- stateless 2026-07-28 -----------------------------------------------------------------


def test_stateless_requests_need_no_initialize(home):
    async def scenario():
        peer = Peer()
        listed = await peer.request("tools/list", {"_meta": MODERN_META})
        called = await peer.call("get_alarm_status", {}, _meta=MODERN_META)
        return listed["result"], called["result"]

    listed, called = run(scenario)
    assert listed["resultType"] == "complete"
    assert listed["cacheScope"] in ("private", "public") and listed["ttlMs"] >= 0
    assert called["resultType"] == "complete"
    assert called["structuredContent"] == {"armed": False}


def test_server_discover():
    async def scenario():
        return await Peer().request("server/discover", {"_meta": MODERN_META})

    result = run(scenario)["result"]
    assert "2026-07-28" in result["supportedVersions"] and "2025-11-25" in result["supportedVersions"]
    assert result["capabilities"]["tools"]["listChanged"] is True
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "homehub"
    assert result["resultType"] == "complete"
    assert result["cacheScope"] == "private"
    assert {"ttlMs", "cacheScope", "instructions"} <= result.keys()


def test_stateless_envelope_is_checked_and_handshake_methods_are_gone():
    async def scenario():
        peer = Peer()
        no_caps = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
        return (
            await peer.request("tools/list", {"_meta": no_caps}),
            await peer.request("ping", {"_meta": MODERN_META}),
            await peer.request("logging/setLevel", {"level": "info", "_meta": MODERN_META}),
        )

    no_caps, ping, set_level = run(scenario)
    assert no_caps["error"]["code"] == jsonrpc.INVALID_PARAMS
    assert ping["error"]["code"] == jsonrpc.METHOD_NOT_FOUND
    assert set_level["error"]["code"] == jsonrpc.METHOD_NOT_FOUND


def test_unsupported_modern_version_is_32022():
    async def scenario():
        meta = {**MODERN_META, "io.modelcontextprotocol/protocolVersion": "2099-01-01"}
        return await Peer().request("tools/list", {"_meta": meta})

    error = run(scenario)["error"]
    assert error["code"] == jsonrpc.UNSUPPORTED_PROTOCOL_VERSION
    assert error["data"]["requested"] == "2099-01-01"
    assert "2026-07-28" in error["data"]["supported"]


# --- tools --------------------------------------------------------------------------------


def test_pagination_walks_every_tool_once_in_stable_order():
    reg = make_registry(250)

    async def scenario():
        peer = Peer(tools=reg)
        await peer.initialize()
        names, cursor, pages = [], None, 0
        while True:
            result = (await peer.request("tools/list", {"cursor": cursor} if cursor else {}))["result"]
            names += [t["name"] for t in result["tools"]]
            pages += 1
            cursor = result.get("nextCursor")
            if cursor is None:
                return names, pages

    names, pages = run(scenario)
    assert names == [f"tool_{i:03d}" for i in range(250)]
    assert pages == 3


def test_slow_tool_does_not_block_ping_and_can_be_cancelled():
    reg = ToolRegistry()
    started, outcome = asyncio.Event(), {}

    @tool_on(reg, scope="read", name="slow")
    async def slow(args: Empty, ctx: ToolContext) -> dict:
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            outcome["cancelled"] = True
            raise
        return {}

    async def scenario():
        peer = Peer(tools=reg)
        await peer.initialize()
        await peer.session.receive(
            {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "slow"}}, parsed=True
        )
        await asyncio.wait_for(started.wait(), 5)
        await peer.session.receive({"jsonrpc": "2.0", "id": 8, "method": "ping"}, parsed=True)
        pinged = list(peer.sent)
        cancel = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": 7, "reason": "user"},
        }
        await peer.session.receive(cancel, parsed=True)
        await peer.session.drain()
        return pinged, peer.sent

    pinged, sent = run(scenario)
    assert pinged == [{"jsonrpc": "2.0", "id": 8, "result": {}}]
    assert outcome == {"cancelled": True}
    assert all(m.get("id") != 7 for m in sent)  # a cancelled request gets no response


def test_progress_is_sent_only_with_a_token():
    reg = ToolRegistry()

    @tool_on(reg, scope="read", name="counter")
    async def counter(args: Count, ctx: ToolContext) -> dict:
        for i in range(1, args.n + 1):
            await ctx.report_progress(i, args.n, f"{i}/{args.n}")
        return {"done": args.n}

    async def scenario(with_token):
        peer = Peer(tools=reg)
        await peer.initialize()
        params = {"_meta": {"progressToken": "tok-1"}} if with_token else {}
        result = await peer.call("counter", {"n": 3}, **params)
        return result, peer.sent

    result, sent = async_to_sync(scenario)(True)
    assert result["result"]["structuredContent"] == {"done": 3}
    progress = [m["params"] for m in sent if m.get("method") == "notifications/progress"]
    assert progress == [
        {"progressToken": "tok-1", "progress": i, "total": 3, "message": f"{i}/3"} for i in (1, 2, 3)
    ]
    _, sent = async_to_sync(scenario)(False)
    assert sent == []


def test_logging_respects_set_level():
    reg = ToolRegistry()

    @tool_on(reg, scope="read", name="chatty")
    async def chatty(args: Empty, ctx: ToolContext) -> dict:
        await ctx.log("info", "just saying")
        await ctx.log("error", {"problem": "x"})
        return {}

    async def scenario():
        peer = Peer(tools=reg)
        await peer.initialize()
        assert (await peer.request("logging/setLevel", {"level": "warning"}))["result"] == {}
        await peer.call("chatty", {})
        return [m["params"] for m in peer.sent if m.get("method") == "notifications/message"]

    assert run(scenario) == [{"level": "error", "logger": "homehub", "data": {"problem": "x"}}]


def test_logs_name_their_logger_and_never_carry_a_token():
    reg = ToolRegistry()

    @tool_on(reg, scope="read", name="careless")
    async def careless(args: Empty, ctx: ToolContext) -> dict:
        assert ctx.logs("info") and not ctx.logs("debug") and not ctx.logs("loud")
        await ctx.log(
            "info", {"used": "hh_0a1b2c3d4e5f_S3cr3t-t0ken", "header": "Bearer abc.def"}, logger="app"
        )
        await ctx.log("debug", "not wanted")
        return {}

    async def scenario():
        peer = Peer(tools=reg)
        await peer.initialize()
        await peer.request("logging/setLevel", {"level": "info"})
        await peer.call("careless", {})
        return [m["params"] for m in peer.sent if m.get("method") == "notifications/message"]

    assert run(scenario) == [
        {"level": "info", "logger": "app", "data": {"used": "[redacted]", "header": "[redacted]"}}
    ]


def test_a_sync_tool_logs_from_its_thread_only_what_is_wanted():
    reg = ToolRegistry()

    @tool_on(reg, scope="read", name="sync_chatty")
    def sync_chatty(args: Empty, ctx: ToolContext) -> dict:
        for level in ("debug", "info", "warning"):
            ctx.log_sync(level, f"at {level}")
        return {}

    async def scenario(level: str | None):
        peer = Peer(tools=reg)
        meta = {**MODERN_META, "io.modelcontextprotocol/logLevel": level} if level else MODERN_META
        await peer.call("sync_chatty", {}, _meta=meta)
        return [m["params"]["data"] for m in peer.sent if m.get("method") == "notifications/message"]

    assert async_to_sync(scenario)("info") == ["at info", "at warning"]
    assert async_to_sync(scenario)(None) == []


def test_list_changed_reaches_initialized_sessions():
    reg = make_registry(1)

    async def scenario():
        peer = Peer(tools=reg)
        await peer.initialize()
        reg.notify_changed()
        message = await peer.wait_for(lambda m: m.get("method") == "notifications/tools/list_changed")
        await peer.session.close()
        return message

    assert run(scenario) == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}


def test_a_crashing_tool_is_an_error_result_and_the_session_goes_on():
    reg = ToolRegistry()

    @tool_on(reg, scope="read", name="boom")
    def boom(args: Empty, ctx: ToolContext) -> dict:
        raise ZeroDivisionError("internal detail")

    async def scenario():
        peer = Peer(tools=reg)
        await peer.initialize()
        return await peer.call("boom", {}), await peer.request("ping", id=2)

    crashed, ping = run(scenario)
    assert crashed["result"]["isError"] is True
    assert "internal detail" not in crashed["result"]["content"][0]["text"]
    assert ping["result"] == {}


# --- the home tools through the engine ------------------------------------------------------


def test_home_tools_have_seed_000_shapes(home):
    async def scenario():
        peer = Peer()
        await peer.initialize()
        listed = (await peer.request("tools/list"))["result"]["tools"]
        results = {}
        for name, args in [
            ("set_light_state", {"name": "salon", "on": True}),
            ("set_alarm_state", {"armed": True}),
            ("get_presence", {}),
            ("get_alarm_status", {}),
            ("list_lights_on", {}),
            ("get_all_states", {}),
        ]:
            results[name] = (await peer.call(name, args))["result"]
        return listed, results

    listed, results = run(scenario)
    by_name = {t["name"]: t for t in listed}
    assert set(by_name) >= {
        "get_presence",
        "get_alarm_status",
        "list_lights_on",
        "set_light_state",
        "set_alarm_state",
        "get_all_states",
    }
    assert by_name["set_light_state"]["inputSchema"]["required"] == ["name", "on"]
    assert by_name["get_all_states"]["annotations"]["readOnlyHint"] is True
    assert by_name["set_light_state"]["annotations"]["readOnlyHint"] is False
    assert results["set_light_state"]["structuredContent"] == {"ok": True}
    assert results["set_alarm_state"]["structuredContent"] == {"ok": True}
    assert results["get_presence"]["structuredContent"] == {"present": False, "known_people": []}
    assert results["get_alarm_status"]["structuredContent"] == {"armed": True}
    assert results["list_lights_on"]["structuredContent"] == {"on": ["salon"]}
    assert results["get_all_states"]["structuredContent"]["lights"]["salon"] is True
    for result in results.values():
        assert result["isError"] is False
        assert result["content"][0]["type"] == "text"
    events = Event.objects.filter(interface="mcp-stdio", actor="tester")
    assert sorted(events.values_list("action", flat=True)) == ["alarm.set", "light.set"]


def test_tool_argument_errors_are_actionable_tool_errors(home):
    async def scenario():
        peer = Peer()
        await peer.initialize()
        return [
            (await peer.call("set_light_state", {}))["result"],
            (await peer.call("set_light_state", {"name": "salon", "on": "yes"}))["result"],
            (await peer.call("set_light_state", {"name": "salon", "on": True, "colour": "red"}))["result"],
            (await peer.call("set_light_state", ["salon", True]))["result"],
            (await peer.call("set_light_state", {"name": "sotano", "on": True}))["result"],
        ]

    missing, wrong_type, extra, not_object, unknown = run(scenario)
    for result in (missing, wrong_type, extra, not_object, unknown):
        assert result["isError"] is True
    assert missing["content"][0]["text"] == "Faltan parámetros requeridos: name, on"
    assert "'on'" in wrong_type["content"][0]["text"]
    assert "colour" in extra["content"][0]["text"]
    assert "objeto" in not_object["content"][0]["text"]
    assert unknown["structuredContent"] == {"ok": False, "error": "Luz 'sotano' no encontrada"}
    assert not Light.objects.filter(on=True).exists()


def test_scopes_hide_and_refuse_tools_and_leave_state_unchanged(home):
    async def scenario():
        peer = Peer(scopes={"read"})
        await peer.initialize()
        listed = [t["name"] for t in (await peer.request("tools/list"))["result"]["tools"]]
        refused = await peer.call("set_light_state", {"name": "salon", "on": True})
        return listed, refused

    listed, refused = run(scenario)
    assert "get_all_states" in listed and "set_light_state" not in listed
    assert refused["error"]["code"] == jsonrpc.FORBIDDEN
    assert refused["error"]["data"] == {"requiredScope": "control"}
    assert not Light.objects.filter(on=True).exists()
    assert not Event.objects.filter(action="light.set").exists()


def test_engine_version_constants_are_consistent():
    assert engine.BATCH_VERSION in engine.HANDSHAKE_VERSIONS
    assert set(engine.STATELESS_VERSIONS).isdisjoint(engine.HANDSHAKE_VERSIONS)


def test_rate_limit_per_token_says_when_to_retry(home, settings):
    from django.core.cache import cache

    from mcp_endpoint.engine.session import ServerSession
    from mcp_endpoint.engine.tools import Caller

    cache.clear()
    settings.MCP_RATE_LIMIT = 2

    async def scenario():
        sent = []

        async def send(message):
            sent.append(message)

        session = ServerSession(Caller("limited", "mcp-http", frozenset({"read"}), rate_key="k1"), send)
        await session.handle({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}})
        results = []
        for i in range(3):
            message = {
                "jsonrpc": "2.0",
                "id": i + 1,
                "method": "tools/call",
                "params": {"name": "get_alarm_status"},
            }
            results.append((await session.handle(message))["result"])
        return results

    first, second, third = run(scenario)
    assert not first["isError"] and not second["isError"]
    assert third["isError"] and "retry in" in third["content"][0]["text"]
