"""An LLM writes an automation the way the README tells it to, with the official MCP SDK client
over Streamable HTTP against a real `serve` and a token from `create_mcp_token`: validate (a
bad draft, then a good one), dry run, save, enable (the call waits while the owner, logged in
to the dashboard over HTTP, reads the definition and its dry run on the request's page and
approves), then a change it makes fires the automation, whose run it reads back."""

from __future__ import annotations

import asyncio
import io
import re
from typing import Any

import httpx
import pytest
from asgiref.sync import async_to_sync
from django.core.management import call_command

from audit.models import Event
from automations.models import Automation
from devices.home import selectors as home_reads
from devices.home import services as home_services
from tests.devices_support import hub
from tests.hub_support import create_account, log_in_over_http
from tests.mcp_helpers import sdk_client
from tests.mqtt_support import wait_until

pytestmark = pytest.mark.live

OWNER, PASSWORD = "ana", "pw-for-tests-only-9"
NAME = "Salon enciende cocina"
GOOD: dict[str, Any] = {
    "name": NAME,
    "triggers": [{"type": "light", "name": "salon", "to": "on"}],
    "conditions": [{"type": "alarm", "armed": False}],
    "actions": [{"tool": "set_light_state", "arguments": {"name": "cocina", "on": True}}],
}
BAD = {**GOOD, "actions": [{"tool": "set_light_state", "arguments": {"name": "sotano", "on": True}}]}
SYSTEM = {"actor": "test", "interface": "system"}


def token_from_the_command() -> str:
    printed = io.StringIO()
    call_command(
        "create_mcp_token",
        "Claude",
        "--scopes",
        "read,control,automations",
        stdout=printed,
        stderr=io.StringIO(),
    )
    return printed.getvalue().strip().splitlines()[-1]


def owner_approves(base: str) -> str:
    """The owner logs in, waits for the request on *Requests*, reads its page and approves;
    the page read."""
    with httpx.Client(base_url=base, timeout=10) as browser:
        log_in_over_http(browser, OWNER, PASSWORD)
        found = wait_until(
            lambda: re.search(r'action="(/requests/\d+/)"', browser.get("/requests/").text),
            timeout=15,
            what="the request on the dashboard",
        )
        page = browser.get(found[1]).text
        form = {"csrfmiddlewaretoken": browser.cookies["csrftoken"], "decision": "approve"}
        assert browser.post(found[1], data=form).status_code == 302
        return page


def test_an_llm_writes_tries_saves_and_has_an_automation_enabled_then_sees_it_run(live_env):
    create_account(OWNER, PASSWORD)
    home_services.set_light_state("salon", True, **SYSTEM)  # the past the dry run replays
    home_services.set_light_state("salon", False, **SYSTEM)
    token = token_from_the_command()

    async def flow(base: str) -> dict[str, Any]:
        async with sdk_client(base, token, timeout=30) as claude:

            async def call(name: str, arguments: dict[str, Any]) -> Any:
                result = await claude.call_tool(name, arguments)
                assert not result.is_error, (name, result.content)
                return result.structured_content

            out: dict[str, Any] = {
                "bad": await call("automation_validate", {"definition": BAD}),
                "good": await call("automation_validate", {"definition": GOOD}),
                "tried": await call("automation_dry_run", {"definition": GOOD, "days": 1}),
                "saved": await call("automation_save", {"definition": GOOD}),
            }
            version = out["saved"]["version"]
            enabled, out["page"] = await asyncio.gather(
                call("automation_set_enabled", {"name": NAME, "enabled": True, "version": version}),
                asyncio.to_thread(owner_approves, base),
            )
            out["enabled"] = enabled
            await asyncio.to_thread(
                wait_until, lambda: Automation.objects.get(name=NAME).holder, what="held by the engine"
            )
            await call("set_light_state", {"name": "salon", "on": True})
            for _ in range(100):
                out["runs"] = (await call("automation_runs", {"name": NAME}))["runs"]
                if out["runs"] and out["runs"][0]["status"] != "running":
                    return out
                await asyncio.sleep(0.1)
            raise AssertionError(f"no run ended: {out['runs']}")

    with hub(live_env, serve=True, AUTOMATION_LEASE_SECONDS="1.5") as base:
        out = async_to_sync(flow)(base)

    assert out["bad"]["valid"] is False
    assert "actions[0].arguments.name: no light named 'sotano'" in out["bad"]["errors"]
    assert out["good"] == {"valid": True, "errors": [], "definition": out["good"]["definition"]}
    (firing,) = out["tried"]["fired"]  # the salon switched on before
    assert firing["trigger"]["name"] == "salon" and firing["ran"] is True
    assert out["saved"]["enabled"] is False and out["saved"]["version"] == 1
    assert NAME in out["page"] and "Dry run over the last 7 days" in out["page"]
    assert ": 1 firing," in out["page"] and "sotano" not in out["page"]
    assert (out["enabled"]["enabled"], out["enabled"]["enabled_by"]) == (True, OWNER)

    (run,) = out["runs"]
    trigger, condition, action = run["trace"]
    assert run["status"] == "done" and trigger["trigger"]["name"] == "salon"
    assert condition["ok"] is True and condition["why"] == "disarmed"
    assert action["ok"] is True and home_reads.light("cocina")["on"] is True
    event = Event.objects.get(action="light.set", target="light:cocina")
    assert (event.actor, event.interface) == (f"automation:{NAME}", "automation")
