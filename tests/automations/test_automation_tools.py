"""Automations through MCP: validate, dry run, save, read, delete in an in-process session; the
schema resource and the write_automation prompt; enabling by a token waits for an owner on the
hub, whose request page shows the exact definition and its dry run, and the owner who approved
is the one whose rights it runs with."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.test import Client

from audit.models import Event
from automations import authoring
from automations.models import Automation
from common import roles
from mcp_endpoint.auth.tokens import create_token
from mcp_endpoint.controls import confirmation
from mcp_endpoint.engine.pipeline import InsufficientScope, call_tool
from mcp_endpoint.engine.registry import registry
from mcp_endpoint.engine.tools import Caller, ToolContext
from tests.mcp_helpers import Peer

EVERY = frozenset({"read", "control", "automations"})
TOKEN = Caller(actor="token:helper", interface="mcp-http", scopes=EVERY, audited=True, confirms=True)
DEFINITION: dict[str, Any] = {
    "name": "Garage at night",
    "triggers": [{"type": "time", "cron": "0 23 * * *"}],
    "actions": [{"tool": "set_light_state", "arguments": {"name": "garage", "on": False}}],
}


def run(coro_fn, *args):
    return async_to_sync(coro_fn)(*args)


async def session_calls(scopes: frozenset[str], *calls: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
    peer = Peer(scopes=scopes)
    await peer.initialize()
    return [
        (await peer.call(name, arguments, id=i + 1))["result"] for i, (name, arguments) in enumerate(calls)
    ]


@pytest.mark.django_db
def test_write_check_try_and_read_through_a_session(home):
    bad = {
        **DEFINITION,
        "actions": [{"tool": "set_light_state", "arguments": {"name": "sotano", "on": True}}],
    }
    validated, refused, tried, saved, listed, got, runs = run(
        session_calls,
        EVERY,
        ("automation_validate", {"definition": bad}),
        ("automation_save", {"definition": bad}),
        ("automation_dry_run", {"definition": DEFINITION, "days": 2}),
        ("automation_save", {"definition": DEFINITION}),
        ("automation_list", {}),
        ("automation_get", {"name": DEFINITION["name"]}),
        ("automation_runs", {"name": DEFINITION["name"]}),
    )
    assert validated["structuredContent"] == {
        "valid": False,
        "errors": ["actions[0].arguments.name: no light named 'sotano'"],
        "definition": None,
    }
    assert refused["isError"] and "Not saved: actions[0].arguments.name" in refused["content"][0]["text"]
    assert len(tried["structuredContent"]["fired"]) == 2 and tried["structuredContent"]["fired"][0]["ran"]
    assert saved["structuredContent"]["version"] == 1 and saved["structuredContent"]["enabled"] is False
    assert [a["name"] for a in listed["structuredContent"]["automations"]] == [DEFINITION["name"]]
    assert got["structuredContent"]["definition"]["triggers"] == DEFINITION["triggers"]
    assert runs["structuredContent"] == {"runs": []}
    (deleted,) = run(session_calls, EVERY, ("automation_delete", {"name": DEFINITION["name"]}))
    assert deleted["structuredContent"] == {"name": DEFINITION["name"], "deleted": True}
    assert not Automation.objects.exists()


@pytest.mark.django_db
def test_a_token_without_control_cannot_save_what_switches_lights(home):
    (refused,) = run(
        session_calls, frozenset({"read", "automations"}), ("automation_save", {"definition": DEFINITION})
    )
    assert refused["isError"]
    assert "'set_light_state' needs the 'control' scope, which you lack" in refused["content"][0]["text"]
    reader = Caller(actor="r", interface="mcp-http", scopes=frozenset({"read"}))
    with pytest.raises(InsufficientScope):
        run(call_tool, "automation_save", {"definition": DEFINITION}, ToolContext(caller=reader))


@pytest.mark.django_db
def test_the_schema_resource_and_the_prompt(home):
    async def read() -> tuple[dict[str, Any], dict[str, Any]]:
        peer = Peer(scopes=EVERY)
        await peer.initialize()
        resource = await peer.request("resources/read", {"uri": "homehub://automations/schema"}, id=2)
        prompt = await peer.request(
            "prompts/get", {"name": "write_automation", "arguments": {"goal": "arm when we leave"}}, id=3
        )
        return resource["result"], prompt["result"]

    resource, prompt = run(read)
    document = json.loads(resource["contents"][0]["text"])
    assert "triggers" in document["schema"]["properties"] and len(document["examples"]) == 4
    text = prompt["messages"][0]["content"]["text"]
    assert "arm when we leave" in text and "salon" in text and "automation_dry_run" in text


def owner_on_the_request_page(owner: Any, seen: list[str], decided: list[int]) -> threading.Thread:
    """The owner opens the first request that waits, reads it, and approves it."""

    def answer() -> None:
        browser = Client()
        browser.force_login(owner)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            waiting = confirmation.open_requests()
            if waiting:
                page = browser.get(f"/requests/{waiting[0].pk}/")
                seen.append(page.content.decode())
                decided.append(
                    browser.post(f"/requests/{waiting[0].pk}/", {"decision": "approve"}).status_code
                )
                return
            time.sleep(0.05)

    thread = threading.Thread(target=answer)
    thread.start()
    return thread


@pytest.mark.django_db(transaction=True)
def test_enabling_by_a_token_waits_for_an_owner_who_sees_the_definition_and_its_dry_run(
    home, django_user_model
):
    owner = django_user_model.objects.create_user("olga", password="pw-for-tests-only")
    roles.assign(owner, roles.OWNER)
    authoring.save_automation(DEFINITION, actor="token:helper", interface="mcp-http")
    changed = authoring.save_automation(
        {**DEFINITION, "description": "v2"}, actor="token:helper", interface="mcp-http"
    )
    no_owner = run(
        call_tool,
        "automation_set_enabled",
        {"name": DEFINITION["name"], "enabled": True, "version": 1},
        ToolContext(caller=Caller("root", "mcp-stdio")),
    )
    assert no_owner.is_error and "needs an owner" in (no_owner.text or "")  # nobody approved
    seen: list[str] = []
    decided: list[int] = []
    owner_thread = owner_on_the_request_page(owner, seen, decided)
    result = run(
        call_tool,
        "automation_set_enabled",
        {"name": DEFINITION["name"], "enabled": True, "version": changed.version},
        ToolContext(caller=TOKEN),
    )
    owner_thread.join()
    assert not result.is_error, result.text
    assert decided == [302]
    page = seen[0]
    assert "Definition (version 2)" in page and "0 23 * * *" in page and "v2" in page
    assert "Dry run over the last 7 days" in page and " firings, 0 changes replayed." in page
    row = Automation.objects.get()
    assert row.enabled and row.enabled_by == owner
    assert Event.objects.filter(action="automation.enable", actor="token:helper").exists()
    # disabling is not dangerous: done at once, by the token
    off = run(
        call_tool,
        "automation_set_enabled",
        {"name": DEFINITION["name"], "enabled": False, "version": 2},
        ToolContext(caller=TOKEN),
    )
    assert not off.is_error and not Automation.objects.get().enabled


@pytest.mark.django_db(transaction=True)
def test_a_tokens_enabling_over_rest_waits_for_the_owner_too(home, django_user_model, client):
    owner = django_user_model.objects.create_user("olga", password="pw-for-tests-only")
    roles.assign(owner, roles.OWNER)
    authoring.save_automation(DEFINITION, actor="token:helper", interface="mcp-http")
    token = create_token("script", ["read", "control", "automations"], actor="test", interface="system")[1]
    seen: list[str] = []
    decided: list[int] = []
    owner_thread = owner_on_the_request_page(owner, seen, decided)
    enabled = client.post(
        f"/api/automations/{DEFINITION['name']}/enable",
        {"version": 1},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    owner_thread.join()
    assert enabled.status_code == 200, enabled.content
    assert enabled.json()["enabled"] and enabled.json()["enabled_by"] == "olga"
    assert "Definition (version 1)" in seen[0]


def test_which_automation_calls_by_a_token_wait_for_an_owner():
    def waits(name: str, arguments: dict[str, Any]) -> bool:
        found = registry.get(name)
        assert found is not None
        return confirmation.required(found, arguments, TOKEN)

    assert waits("automation_set_enabled", {"name": "n", "enabled": True, "version": 1})
    assert not waits("automation_set_enabled", {"name": "n", "enabled": False, "version": 1})
    assert waits("automation_delete", {"name": "n"})  # its versions go with it
    assert not waits("automation_save", {"definition": DEFINITION})  # saved disabled
