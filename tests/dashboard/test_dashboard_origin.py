"""`/ws/home/` on a live hub carries the owner's session cookie, which the browser sends with
any page's WebSocket: only the hub's own origin (scheme, host and port) may open it."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
from asgiref.sync import async_to_sync
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from tests.hub_support import log_in_over_http, running_hub

pytestmark = pytest.mark.live


async def open_home_socket(base: str, cookie: str, origin: str) -> str:
    """The first frame's type, or the HTTP status the handshake was refused with."""
    url = base.replace("http://", "ws://") + "/ws/home/"
    try:
        async with connect(url, additional_headers={"Cookie": cookie, "Origin": origin}) as ws:
            return json.loads(await asyncio.wait_for(ws.recv(), 10))["type"]
    except InvalidStatus as refused:
        return str(refused.response.status_code)


def test_only_the_hubs_own_origin_opens_the_owners_socket(live_env, django_user_model):
    django_user_model.objects.create_superuser("boss", "boss@example.com", "pw-for-tests-only")
    with running_hub(live_env) as hub, httpx.Client(base_url=hub.base, timeout=10) as browser:
        log_in_over_http(browser, "boss", "pw-for-tests-only")
        cookie = f"sessionid={browser.cookies['sessionid']}"
        other_port = f"http://127.0.0.1:{hub.port + 1 if hub.port < 65535 else hub.port - 1}"
        assert async_to_sync(open_home_socket)(hub.base, cookie, other_port) == "403"
        assert async_to_sync(open_home_socket)(hub.base, cookie, hub.base.replace("http", "https")) == "403"
        assert async_to_sync(open_home_socket)(hub.base, cookie, "http://evil.example") == "403"
        assert async_to_sync(open_home_socket)(hub.base, cookie, hub.base) == "hello"
