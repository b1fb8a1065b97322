"""One change feed across processes: a light switched through `mcp_stdio` (a process of its own,
as Claude Desktop starts it) reaches an open dashboard socket (`/ws/home/`) on one daphne
and a subscribed `/mcp` session on another, within a second; on the default database
channel layer and on Redis. The PostgreSQL pass of the suite runs the same with PostgreSQL."""

import asyncio
import json
import time

import httpx
import pytest
from asgiref.sync import async_to_sync
from django.conf import settings
from django.test import Client
from websockets.asyncio.client import connect

from devices.home import services
from tests.hub_support import create_account, running_hub
from tests.mcp_endpoint.test_mcp_http import INIT, post
from tests.stdio_support import StdioClient

pytestmark = pytest.mark.live
TARGET_SECONDS = 1.0


def login_cookie() -> str:
    user = create_account("watcher", "pw-for-tests-only")
    client = Client()
    client.force_login(user)
    return f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"


async def dashboard_event(base: str, cookie: str, ready: asyncio.Event) -> tuple[dict, float]:
    """The first home event an open dashboard page hears, and when."""
    url = base.replace("http://", "ws://") + "/ws/home/"
    async with connect(url, additional_headers={"Cookie": cookie, "Origin": base}) as ws:
        assert json.loads(await ws.recv())["type"] == "hello"
        ready.set()
        while True:
            message = json.loads(await ws.recv())
            if message["type"] == "event" and message["event"].get("kind") == "light":
                return message["event"], time.monotonic()


async def resource_update(base: str, token: str, uri: str, ready: asyncio.Event) -> tuple[dict, float]:
    """The first `notifications/resources/updated` a `/mcp` session subscribed to `uri` hears."""
    session = post(base, INIT, token).headers["mcp-session-id"]
    subscribe = {"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe", "params": {"uri": uri}}
    post(base, subscribe, token, session)
    headers = {"authorization": f"Bearer {token}", "mcp-session-id": session, "accept": "text/event-stream"}
    async with (
        httpx.AsyncClient(timeout=30) as http,
        http.stream("GET", base + "/mcp", headers=headers) as stream,
    ):
        assert stream.status_code == 200
        ready.set()
        async for line in stream.aiter_lines():
            if line.startswith("data:") and "resources/updated" in line:
                return json.loads(line[5:]), time.monotonic()
    raise AssertionError("the stream ended")


def switch_through_stdio_and_watch(env: dict[str, str], make_token) -> dict[str, float]:
    """Two daphnes (a dashboard socket on one, a subscribed /mcp session on the other) and
    `mcp_stdio` over `env`; the seconds each took to hear the stdio change."""
    cookie, token = login_cookie(), make_token(name="subscriber")
    with running_hub(env) as a, running_hub(env) as b:

        async def scenario():
            ready = [asyncio.Event(), asyncio.Event()]
            dashboard = asyncio.ensure_future(dashboard_event(a.base, cookie, ready[0]))
            subscriber = asyncio.ensure_future(
                resource_update(b.base, token, "home://lights/salon", ready[1])
            )
            async with StdioClient(env) as stdio:
                waiting = asyncio.ensure_future(asyncio.gather(*(r.wait() for r in ready)))
                await asyncio.wait(
                    [waiting, dashboard, subscriber], timeout=10, return_when="FIRST_COMPLETED"
                )
                for task in (dashboard, subscriber):
                    if task.done():
                        task.result()  # it failed before listening: say why
                assert waiting.done(), "the listeners never got ready"
                await asyncio.sleep(0.3)  # the GET stream joins the change group as it opens
                started = time.monotonic()
                answer = await stdio.call("set_light_state", {"name": "salon", "on": True})
                (event, heard_a), (update, heard_b) = await asyncio.wait_for(
                    asyncio.gather(dashboard, subscriber), 10
                )
            assert answer["structuredContent"] == {"ok": True}
            assert (event["name"], event["on"], event["interface"]) == ("salon", True, "mcp-stdio")
            assert update["params"] == {"uri": "home://lights/salon"}
            return {"dashboard": heard_a - started, "mcp": heard_b - started}

        return async_to_sync(scenario)()


def test_a_stdio_change_reaches_every_process_without_redis(live_env, make_token):
    waited = switch_through_stdio_and_watch(live_env, make_token)
    print("database channel layer, seconds to hear a stdio change:", waited)
    assert max(waited.values()) < TARGET_SECONDS, waited


def test_a_stdio_change_reaches_every_process_with_redis(live_env, make_token, redis_url):
    waited = switch_through_stdio_and_watch({**live_env, "REDIS_URL": redis_url}, make_token)
    print("Redis channel layer, seconds to hear a stdio change:", waited)
    assert max(waited.values()) < TARGET_SECONDS, waited


def test_a_lone_process_writes_no_message_rows(transactional_db):
    """`make run` alone (and the tests' own transactions): changes never touch the feed's table."""
    from common.models import FeedMessage

    services.seed_home()
    services.set_light_state("salon", True, actor="t", interface="system")
    assert not FeedMessage.objects.exists()
