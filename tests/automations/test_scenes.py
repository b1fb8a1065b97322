"""Scenes: saved only when every light and tool exists, activated step by step through the one
tool-call pipeline as the activating caller (scopes, a person's confirmation, audit)."""

from __future__ import annotations

import time

import pytest
from asgiref.sync import async_to_sync

from audit.models import Event
from automations import services
from automations.errors import SceneError
from automations.models import Scene
from devices.home import selectors as home_reads
from devices.home import services as home_services
from mcp_endpoint.engine.pipeline import InsufficientScope, call_tool
from mcp_endpoint.engine.tools import Caller, ToolContext
from mcp_endpoint.models import PendingConfirmation

pytestmark = pytest.mark.django_db(transaction=True)

AGENT = Caller(actor="assistant", interface="mcp-http", audited=True, rate_key="scenes", confirms=True)
READER = Caller(actor="reader", interface="mcp-http", scopes=frozenset({"read"}), audited=True, confirms=True)


def call(name: str, arguments: dict, caller: Caller):
    return async_to_sync(call_tool)(name, arguments, ToolContext(caller=caller))


def test_a_scene_naming_a_missing_light_is_refused_naming_it_and_nothing_is_saved(home):
    with pytest.raises(SceneError, match="'sotano'"):
        services.save_scene("Noche", {"salon": True, "sotano": False}, actor="ana", interface="dashboard")
    with pytest.raises(SceneError, match="unknown tool 'no_such_tool'"):
        services.save_scene(
            "Noche", {"salon": True}, [{"tool": "no_such_tool"}], actor="ana", interface="rest"
        )
    for bad_name in ("", "   ", "x" * 101):
        with pytest.raises(SceneError):
            services.save_scene(bad_name, {"salon": True}, actor="ana", interface="rest")
    with pytest.raises(SceneError):
        services.save_scene("Noche", {"salon": "yes"}, actor="ana", interface="rest")  # type: ignore[dict-item]
    assert not Scene.objects.exists() and not Event.objects.filter(action="scene.save").exists()


def test_saved_activated_and_audited_with_who_and_which_door(home):
    services.save_scene("Cena", {"salon": True, "cocina": False}, actor="ana", interface="dashboard")
    saved = Event.objects.get(action="scene.save")
    assert (saved.actor, saved.interface, saved.target) == ("ana", "dashboard", "scene:Cena")
    result = call("scene_activate", {"name": "Cena"}, AGENT)
    assert not result.is_error, result.text
    assert result.structured["ok"] is True
    assert [s["arguments"]["name"] for s in result.structured["steps"]] == ["salon", "cocina"]
    assert home_reads.light("salon")["on"] is True
    # each light went through the pipeline as the caller: its change audited under its name
    switched = Event.objects.filter(action="light.set", actor="assistant", interface="mcp-http")
    assert "salon" in {e.target.split(":")[-1] for e in switched}
    activated = Event.objects.get(action="scene.activate")
    assert (activated.actor, activated.interface) == ("assistant", "mcp-http")


def test_a_read_only_token_cannot_save_or_activate(home):
    with pytest.raises(InsufficientScope):
        call("scene_save", {"name": "Cena", "lights": {"salon": True}}, READER)
    assert not Scene.objects.exists()
    services.save_scene("Cena", {"salon": True}, actor="ana", interface="dashboard")
    with pytest.raises(InsufficientScope):
        call("scene_activate", {"name": "Cena"}, READER)
    assert home_reads.light("salon")["on"] is False
    listed = call("scene_list", {}, READER)
    assert listed.structured == {"scenes": [{"name": "Cena", "lights": {"salon": True}, "tool_calls": []}]}


def test_scene_save_over_mcp_names_the_missing_light(home):
    writer = Caller(
        actor="writer", interface="mcp-http", scopes=frozenset({"read", "automations"}), audited=True
    )
    refused = call("scene_save", {"name": "Cena", "lights": {"atico": True}}, writer)
    assert refused.is_error and "'atico'" in refused.text
    assert not Scene.objects.exists()
    saved = call("scene_save", {"name": "Cena", "lights": {"salon": True}}, writer)
    assert not saved.is_error and Scene.objects.get().lights == {"salon": True}


def test_a_step_beyond_the_callers_scopes_is_refused_and_reported(home):
    services.save_scene(
        "Salir",
        {"salon": False},
        [{"tool": "scene_save", "arguments": {"name": "x", "lights": {}}}],
        actor="ana",
        interface="dashboard",
    )
    controller = Caller(actor="ctl", interface="mcp-http", scopes=frozenset({"control"}), audited=True)
    result = call("scene_activate", {"name": "Salir"}, controller)
    steps = result.structured["steps"]
    assert steps[0]["ok"] is True
    assert steps[1]["ok"] is False and "automations" in steps[1]["error"]
    assert result.structured["ok"] is False and Scene.objects.filter(name="x").count() == 0


def test_a_scene_that_disarms_over_a_token_waits_for_a_person(home, settings):
    home_services.set_alarm_state(True, actor="test", interface="system")
    settings.MCP_CONFIRMATION_SECONDS = 0.5
    services.save_scene(
        "Llegar",
        {"salon": True},
        [{"tool": "set_alarm_state", "arguments": {"armed": False}}],
        actor="ana",
        interface="dashboard",
    )
    started = time.monotonic()
    result = call("scene_activate", {"name": "Llegar"}, AGENT)
    assert time.monotonic() - started >= 0.5  # it waited for the person
    light, disarm = result.structured["steps"]
    assert light["ok"] is True
    assert disarm["ok"] is False and "not approved" in disarm["error"]
    assert home_reads.alarm()["armed"] is True
    assert PendingConfirmation.objects.get().arguments == {"armed": False}


def test_an_unknown_scene_is_an_error(home):
    result = call("scene_activate", {"name": "Nada"}, AGENT)
    assert result.is_error and "Nada" in result.text
