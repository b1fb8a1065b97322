"""Scenes over /mcp with the official SDK client against a live hub: a read-only token cannot
save one, and a scene that disarms, activated over a token, waits for a person on the hub."""

from __future__ import annotations

import threading

import pytest
from mcp.shared.exceptions import MCPError

from automations import services
from automations.models import Scene
from devices.home import selectors as home_reads
from devices.home import services as home_services
from mcp_endpoint.models import PendingConfirmation
from tests.mcp_endpoint.test_confirmation_live import (
    answer_on_the_dashboard,
    hub_that_knows_its_url,
    owner,
    sdk_call,
)

pytestmark = pytest.mark.live
__all__ = ["owner"]  # the fixture, for the test below


def test_read_only_token_cannot_save_and_a_disarming_scene_waits_for_the_owner(live_env, make_token, owner):
    home_services.set_alarm_state(True, actor="test", interface="system")
    services.save_scene(
        "Llegar",
        {"salon": True},
        [{"tool": "set_alarm_state", "arguments": {"armed": False}}],
        actor="ana",
        interface="dashboard",
    )
    reader, controller = (
        make_token(("read",), name="reader"),
        make_token(("read", "control"), name="assistant"),
    )
    with hub_that_knows_its_url(live_env, MCP_CONFIRMATION_SECONDS="20") as base:
        with pytest.raises(BaseExceptionGroup) as refused:  # the SDK raises the hub's 403 answer
            sdk_call(base, reader, "scene_save", {"name": "Otra", "lights": {"salon": False}})
        assert refused.group_contains(MCPError, match="requires the 'automations' scope")
        listed = sdk_call(base, reader, "list_rooms", {})
        assert [r["name"] for r in listed.structured_content["rooms"]][:2] == ["Salón", "Cocina"]

        approving = threading.Thread(target=answer_on_the_dashboard, args=(base, "approve"))
        approving.start()
        activated = sdk_call(base, controller, "scene_activate", {"name": "Llegar"})
        approving.join()
    assert not activated.is_error, activated.content[0].text
    steps = activated.structured_content["steps"]
    assert [s["ok"] for s in steps] == [True, True]
    assert home_reads.light("salon")["on"] is True and home_reads.alarm()["armed"] is False
    request = PendingConfirmation.objects.get()  # the disarm waited for the owner's word
    assert (request.decision, request.decided_by, request.actor) == ("approved", "ana", "assistant")
    assert list(Scene.objects.values_list("name", flat=True)) == ["Llegar"]
