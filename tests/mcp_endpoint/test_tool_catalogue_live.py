"""The tool catalogue against running hubs: the owner disables a tool in the admin, and an
MCP client connected to the same hub process, or to another one, hears
`notifications/tools/list_changed`, no longer sees the tool, and is refused it."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from asgiref.sync import async_to_sync, sync_to_async

from mcp_endpoint.models import ToolSetting
from tests.hub_support import log_in_over_http
from tests.mcp_helpers import sdk_client

pytestmark = pytest.mark.live

TOOL = "get_presence"


def admin_disable(base: str, name: str) -> int:
    """Log in to the hub's admin as `boss`, open the catalogue, and untick `name`'s "enabled"."""
    with httpx.Client(base_url=base, timeout=10) as browser:
        log_in_over_http(browser, "boss", "pw-for-tests-only", login="/admin/login/")
        listing = browser.get("/admin/mcp_endpoint/toolsetting/")  # the rows are made here
        assert listing.status_code == 200 and name in listing.text
        pk = ToolSetting.objects.get(name=name).pk
        assert browser.get(f"/admin/mcp_endpoint/toolsetting/{pk}/change/").status_code == 200
        saved = browser.post(
            f"/admin/mcp_endpoint/toolsetting/{pk}/change/",
            data={
                "csrfmiddlewaretoken": browser.cookies["csrftoken"],
                "description": "",
            },  # "enabled" unticked
        )
        return saved.status_code


def _disable_and_listen(admin_base: str, client_base: str, token: str):
    from mcp.shared.exceptions import MCPError

    async def scenario():
        async with (
            sdk_client(client_base, token, mode="auto") as client,
            client.listen(tools_list_changed=True) as subscription,
        ):
            before = {t.name for t in (await client.list_tools()).tools}
            await asyncio.sleep(0.3)  # let the stream join
            status = await sync_to_async(admin_disable)(admin_base, TOOL)
            event = await asyncio.wait_for(anext(aiter(subscription)), 10)
            after = {t.name for t in (await client.list_tools()).tools}
            try:
                await client.call_tool(TOOL, {})
                refusal = None
            except MCPError as exc:
                refusal = exc.error.message
            return before, status, event, after, refusal

    return async_to_sync(scenario)()


def _check(outcome) -> None:
    from mcp.shared.subscriptions import ToolsListChanged

    before, status, event, after, refusal = outcome
    assert TOOL in before and status == 302
    assert event == ToolsListChanged()
    assert TOOL not in after and "get_alarm_status" in after
    assert refusal is not None and TOOL in refusal


def test_disabling_a_tool_in_the_admin_reaches_a_connected_client(
    daphne_server, make_token, django_user_model
):
    django_user_model.objects.create_superuser("boss", "boss@example.com", "pw-for-tests-only")
    _check(_disable_and_listen(daphne_server, daphne_server, make_token()))


def test_and_a_client_of_another_hub_process(daphne_server, second_daphne, make_token, django_user_model):
    django_user_model.objects.create_superuser("boss", "boss@example.com", "pw-for-tests-only")
    other, _ = second_daphne
    _check(_disable_and_listen(daphne_server, other, make_token()))


def test_and_over_redis(live_env, make_token, django_user_model, redis_url):
    from tests.devices_support import hub

    django_user_model.objects.create_superuser("boss", "boss@example.com", "pw-for-tests-only")
    with hub(live_env, REDIS_URL=redis_url) as admin_hub, hub(live_env, REDIS_URL=redis_url) as other:
        _check(_disable_and_listen(admin_hub, other, make_token()))
