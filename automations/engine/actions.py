"""An automation's actions, each done as its run's caller and told as one step of the run's
trace: `{"action", "ok", "result" | "error"}`. A tool call goes through the one tool-call
pipeline (scopes, audit, confirmation) as every door's does; a scene through
`automations.services.activate_scene`; a notification through
`automations.notifications.services.notify`."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from asgiref.sync import sync_to_async

from automations.definition import Action, DelayAction, NotifyAction, SceneAction, ToolAction
from automations.errors import SceneNotFound
from automations.notifications.models import Notification
from automations.notifications.services import notify
from automations.services import activate_scene
from mcp_endpoint.engine.pipeline import ToolRefused, call_tool
from mcp_endpoint.engine.tools import ToolContext

RESULT_CHARS = 300  # a tool's result is kept in the trace this briefly


def describe(action: Action) -> str:
    """An action in words, as the trace and the dry run show it."""
    if isinstance(action, ToolAction):
        return f"call {action.tool} {json.dumps(action.arguments, ensure_ascii=False, sort_keys=True)}"
    if isinstance(action, SceneAction):
        return f"activate scene {action.scene}"
    if isinstance(action, DelayAction):
        return f"wait {action.delay_seconds:g} s"
    return f"notify ({action.level}): {action.notify}"


def _brief(text: str | None) -> str:
    text = text or ""
    return text if len(text) <= RESULT_CHARS else text[: RESULT_CHARS - 1] + "…"


async def perform(action: Action, ctx: ToolContext, automation: str) -> dict[str, Any]:
    """Do `action` for the run of `automation`; its step of the trace (never raises for a
    failure of the action itself: a refused or failed call is a step that is not ok)."""
    step: dict[str, Any] = {"action": describe(action)}
    try:
        if isinstance(action, ToolAction):
            result = await call_tool(action.tool, action.arguments, ctx)
            text = " ".join(c.get("text", "") for c in result.as_mcp()["content"] if c.get("type") == "text")
            step["ok"] = not result.is_error
            step["error" if result.is_error else "result"] = _brief(text) or (
                "failed" if result.is_error else ""
            )
        elif isinstance(action, SceneAction):
            outcome = await activate_scene(action.scene, ctx)
            step["ok"] = outcome["ok"]
            failed = [f"{s['tool']}: {s['error']}" for s in outcome["steps"] if not s["ok"]]
            step["error" if failed else "result"] = _brief(
                "; ".join(failed) or f"{len(outcome['steps'])} steps"
            )
        elif isinstance(action, DelayAction):
            await asyncio.sleep(action.delay_seconds)
            step["ok"] = True
        else:
            await _notify(action, automation)
            step["ok"] = True
    except ToolRefused as refused:
        step.update(ok=False, error=refused.message)
    except SceneNotFound as missing:
        step.update(ok=False, error=str(missing))
    return step


async def _notify(action: NotifyAction, automation: str) -> None:
    await sync_to_async(notify)(
        action.notify,
        title=action.title or automation,
        source=Notification.Source.AUTOMATION,
        level=action.level,
    )
