"""The automation editor's form, both ways: the posted fields to a definition (the common shapes:
one trigger, an alarm and a time-window condition, a few tool, scene or notify actions), and a
saved definition back to the fields when it fits those shapes (else the editor shows its JSON).
The definition JSON textarea, when filled, wins over the fields. Whether a definition holds is
`automations.validation`'s question; here only what the form itself can get wrong (a number or
JSON that does not parse) is an error, named by the field the definition would have had."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from django.http import QueryDict
from django.utils.translation import gettext

TRIGGER_KINDS = ("light", "presence", "alarm", "sensor", "time", "sun", "agent")
ACTION_KINDS = ("tool", "scene", "notify")
ACTION_ROWS = 3
LEVELS = ("info", "warning", "alarm")


@dataclass
class Posted:
    """What the editor posted: the definition to check (None when the form could not make one),
    the problems the form found itself, and which action row each of the definition's actions
    came from (to show `actions[i]` problems beside their row)."""

    data: dict[str, Any] | None
    errors: list[str] = field(default_factory=list)
    action_rows: list[int] = field(default_factory=list)
    from_json: bool = False


def _text(post: QueryDict, name: str) -> str:
    return str(post.get(name, "")).strip()


def _number(post: QueryDict, name: str, where: str, errors: list[str], *, integer: bool = False) -> Any:
    raw = _text(post, name)
    if not raw:
        return None
    try:
        return int(raw) if integer else float(raw)
    except ValueError:
        said = gettext("'%(raw)s' is not a whole number") if integer else gettext("'%(raw)s' is not a number")
        errors.append(f"{where}: " + said % {"raw": raw})
        return None


def definition_from_post(post: QueryDict) -> Posted:
    """The definition the editor's fields (or its JSON, when filled) describe."""
    raw = _text(post, "definition_json")
    if raw:
        try:
            given = json.loads(raw)
        except ValueError as exc:
            return Posted(None, [f"definition: not JSON ({exc})"], from_json=True)
        if not isinstance(given, dict):
            return Posted(None, ["definition: must be a JSON object"], from_json=True)
        return Posted(given, from_json=True)
    errors: list[str] = []
    data: dict[str, Any] = {"name": _text(post, "name")}
    if _text(post, "description"):
        data["description"] = _text(post, "description")
    data["triggers"] = [_trigger(post, errors)]
    data["conditions"] = _conditions(post)
    actions, rows = _actions(post, errors)
    data["actions"] = actions
    return Posted(None if errors else data, errors, rows)


def _trigger(post: QueryDict, errors: list[str]) -> dict[str, Any]:
    kind = _text(post, "trigger_type")
    where = "triggers[0]"
    trigger: dict[str, Any] = {"type": kind}
    if kind == "light":
        trigger.update(name=_text(post, "trigger_light"), to=_text(post, "trigger_light_to"))
    elif kind == "presence":
        person = _text(post, "trigger_person")
        trigger.update({"person": person} if person else {"who": _text(post, "trigger_who")})
        trigger["to"] = _text(post, "trigger_presence_to")
    elif kind == "alarm":
        trigger["to"] = _text(post, "trigger_alarm_to")
    elif kind == "sensor":
        trigger.update(zone=_text(post, "trigger_zone"), channel=_text(post, "trigger_channel"))
        for bound in ("above", "below"):
            value = _number(post, f"trigger_{bound}", f"{where}.{bound}", errors)
            if value is not None:
                trigger[bound] = value
        seconds = _number(post, "trigger_for_seconds", f"{where}.for_seconds", errors, integer=True)
        if seconds:
            trigger["for_seconds"] = seconds
    elif kind == "time":
        trigger["cron"] = _text(post, "trigger_cron")
    elif kind == "sun":
        trigger["event"] = _text(post, "trigger_sun_event")
        offset = _number(post, "trigger_offset_minutes", f"{where}.offset_minutes", errors, integer=True)
        if offset:
            trigger["offset_minutes"] = offset
    elif kind == "agent":
        trigger.update(agent=_text(post, "trigger_agent"), to=_text(post, "trigger_agent_to"))
    return trigger


def _conditions(post: QueryDict) -> list[dict[str, Any]]:
    conditions: list[dict[str, Any]] = []
    alarm = _text(post, "condition_alarm")
    if alarm in ("armed", "disarmed"):
        conditions.append({"type": "alarm", "armed": alarm == "armed"})
    window: dict[str, Any] = {"type": "time"}
    for bound in ("after", "before"):
        if _text(post, f"condition_{bound}"):
            window[bound] = _text(post, f"condition_{bound}")
    weekdays = [d for d in post.getlist("condition_weekdays") if d]
    if weekdays:
        window["weekdays"] = weekdays
    if len(window) > 1:
        conditions.append(window)
    return conditions


def _actions(post: QueryDict, errors: list[str]) -> tuple[list[dict[str, Any]], list[int]]:
    actions: list[dict[str, Any]] = []
    rows: list[int] = []
    for row in range(ACTION_ROWS):
        kind = _text(post, f"action_{row}_kind")
        if kind not in ACTION_KINDS:
            continue
        where = f"actions[{len(actions)}]"
        if kind == "tool":
            action: dict[str, Any] = {"tool": _text(post, f"action_{row}_tool")}
            raw = _text(post, f"action_{row}_arguments") or "{}"
            try:
                action["arguments"] = json.loads(raw)
            except ValueError as exc:
                errors.append(f"{where}.arguments: " + gettext("not JSON (%(why)s)") % {"why": exc})
        elif kind == "scene":
            action = {"scene": _text(post, f"action_{row}_scene")}
        else:
            action = {
                "notify": _text(post, f"action_{row}_notify"),
                "level": _text(post, f"action_{row}_level"),
            }
            if _text(post, f"action_{row}_title"):
                action["title"] = _text(post, f"action_{row}_title")
        actions.append(action)
        rows.append(row)
    return actions, rows


def fields_from_post(post: QueryDict) -> dict[str, Any]:
    """The posted fields again, to show the form as it was sent."""
    fields: dict[str, Any] = {key: _text(post, key) for key in post if key != "csrfmiddlewaretoken"}
    fields["condition_weekdays"] = post.getlist("condition_weekdays")
    return fields


def fields_from_definition(definition: dict[str, Any]) -> dict[str, Any] | None:
    """The editor's fields showing `definition`; None when it does not fit the form (more than
    one trigger, other conditions or actions, another mode): the editor shows its JSON."""
    extra = set(definition) - {"name", "description", "triggers", "conditions", "actions"}
    defaults = {"mode": "single", "max_queued": 5, "on_error": "stop"}
    if any(definition.get(key) != value for key, value in defaults.items() if key in extra) or (
        extra - set(defaults)
    ):
        return None
    triggers, actions = definition.get("triggers", []), definition.get("actions", [])
    if len(triggers) != 1 or len(actions) > ACTION_ROWS:
        return None
    fields: dict[str, Any] = {
        "name": definition.get("name", ""),
        "description": definition.get("description", ""),
    }
    trigger = _trigger_fields(triggers[0])
    conditions = _condition_fields(definition.get("conditions", []))
    if trigger is None or conditions is None:
        return None
    fields.update(trigger)
    fields.update(conditions)
    for row, action in enumerate(actions):
        found = _action_fields(row, action)
        if found is None:
            return None
        fields.update(found)
    return fields


def _trigger_fields(trigger: dict[str, Any]) -> dict[str, Any] | None:
    kind = trigger.get("type")
    out: dict[str, Any] = {"trigger_type": kind}
    if kind == "light":
        out.update(trigger_light=trigger["name"], trigger_light_to=trigger["to"])
    elif kind == "presence":
        out.update(
            trigger_person=trigger.get("person", ""),
            trigger_who=trigger.get("who", ""),
            trigger_presence_to=trigger["to"],
        )
    elif kind == "alarm":
        out["trigger_alarm_to"] = trigger["to"]
    elif kind == "sensor":
        out.update(
            trigger_zone=trigger["zone"],
            trigger_channel=trigger["channel"],
            trigger_above=_shown(trigger.get("above")),
            trigger_below=_shown(trigger.get("below")),
            trigger_for_seconds=_shown(trigger.get("for_seconds") or None),
        )
    elif kind == "time":
        out["trigger_cron"] = trigger["cron"]
    elif kind == "sun":
        out.update(
            trigger_sun_event=trigger["event"],
            trigger_offset_minutes=_shown(trigger.get("offset_minutes") or None),
        )
    elif kind == "agent":
        out.update(trigger_agent=trigger["agent"], trigger_agent_to=trigger["to"])
    else:
        return None
    return out


def _shown(value: Any) -> str:
    if value is None:
        return ""
    return f"{value:g}" if isinstance(value, float) else str(value)


def _condition_fields(conditions: list[dict[str, Any]]) -> dict[str, Any] | None:
    out: dict[str, Any] = {"condition_weekdays": []}
    kinds = [c.get("type") for c in conditions]
    if kinds not in ([], ["alarm"], ["time"], ["alarm", "time"]):
        return None
    for condition in conditions:
        if condition["type"] == "alarm":
            out["condition_alarm"] = "armed" if condition["armed"] else "disarmed"
        else:
            out.update(
                condition_after=condition.get("after", ""),
                condition_before=condition.get("before", ""),
                condition_weekdays=condition.get("weekdays", []),
            )
    return out


def _action_fields(row: int, action: dict[str, Any]) -> dict[str, Any] | None:
    prefix = f"action_{row}_"
    if "tool" in action:
        arguments = json.dumps(action.get("arguments", {}), ensure_ascii=False)
        return {prefix + "kind": "tool", prefix + "tool": action["tool"], prefix + "arguments": arguments}
    if "scene" in action:
        return {prefix + "kind": "scene", prefix + "scene": action["scene"]}
    if "notify" in action:
        return {
            prefix + "kind": "notify",
            prefix + "notify": action["notify"],
            prefix + "title": action.get("title", ""),
            prefix + "level": action.get("level", "info"),
        }
    return None


def placed_errors(errors: list[str], action_rows: list[int]) -> dict[str, list[str]]:
    """Each problem under the part of the form it names: `name`, `trigger`, `conditions`,
    `action_<row>`, or `definition` (the rest, shown above the form and beside the JSON)."""
    placed: dict[str, list[str]] = {}
    for error in errors:
        where = "definition"
        if error.startswith("name:"):
            where = "name"
        elif error.startswith("triggers"):
            where = "trigger"
        elif error.startswith("conditions"):
            where = "conditions"
        elif error.startswith("actions["):
            index = error[len("actions[") :].split("]", 1)[0]
            if index.isdigit() and int(index) < len(action_rows):
                where = f"action_{action_rows[int(index)]}"
        placed.setdefault(where, []).append(error)
    return placed
