"""Requests and audit events as a person reads them: "Claude (through /mcp) asks to disarm the
alarm", "ana switched the Salón light on from the dashboard". Pure presentation: the names of
lights and devices come in as mappings (`light_labels`, `device_labels`: a device under its
agent id and under its tools' prefix, `devices.agents.names.slug`), so each function is a plain
function of its arguments; the exact arguments and before -> after stay beside every sentence on the pages."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping
from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from dashboard.templatetags.dashboard_tags import readable

# Where a call came from, as "through ..." reads it.
DOORS = {
    "dashboard": gettext_noop("the dashboard"),
    "admin": gettext_noop("the admin"),
    "rest": gettext_noop("the REST API"),
    "mcp-http": gettext_noop("/mcp"),
    "mcp-ws": gettext_noop("the MCP WebSocket"),
    "mcp-stdio": gettext_noop("the MCP command line"),
    "mcp-endpoint": gettext_noop("a device's MCP endpoint"),
    "mqtt": gettext_noop("MQTT"),
    "device": gettext_noop("a device"),
}

# Audit actions whose sentence is a verb phrase about the target's name.
VERBS = {
    "scene.activate": gettext_noop("activated the scene '{name}'"),
    "scene.save": gettext_noop("saved the scene '{name}'"),
    "scene.delete": gettext_noop("deleted the scene '{name}'"),
    "automation.save": gettext_noop("saved the automation '{name}'"),
    "automation.enable": gettext_noop("enabled the automation '{name}'"),
    "automation.disable": gettext_noop("disabled the automation '{name}'"),
    "automation.delete": gettext_noop("deleted the automation '{name}'"),
    "token.create": gettext_noop("created the token {name}"),
    "token.revoke": gettext_noop("revoked the token {name}"),
    "oauth.grant": gettext_noop("connected the app {name}"),
    "oauth.revoke": gettext_noop("disconnected the app {name}"),
    "agent.connect": gettext_noop("the device {name} connected"),
    "agent.disconnect": gettext_noop("the device {name} disconnected"),
    "agent.approve": gettext_noop("approved the device {name}"),
    "agent.remove": gettext_noop("removed the device {name}"),
    "agent.label": gettext_noop("named the device {name}"),
    "xiaozhi.unbind": gettext_noop("unbound the device {name}"),
    "fel.invoice.record": gettext_noop("recorded the invoice {name}"),
    "home.seed": gettext_noop("set up the home"),
    "room.seed": gettext_noop("set up the room {name}"),
}


def fold(text: str) -> str:
    """`text` for matching as a person types: lower case, without accents ("Salón" -> "salon")."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(char for char in decomposed if not unicodedata.combining(char))


def door(interface: str) -> str:
    return _(DOORS.get(interface, interface))


def light_name(name: str, labels: Mapping[str, str]) -> str:
    return labels.get(name) or name


def action_phrase(
    tool: str,
    arguments: Any,
    *,
    title: str | None = None,
    light_labels: Mapping[str, str] | None = None,
    device_labels: Mapping[str, str] | None = None,
) -> str:
    """What calling `tool` with `arguments` does, as the end of "asks to ...": known hub tools in
    words, a device's tool as "run <title> on <device>", any other "run <title> with <args>"."""
    args = arguments if isinstance(arguments, dict) else {}
    labels = light_labels or {}
    if tool == "set_light_state" and isinstance(args.get("on"), bool):
        state = _("on") if args["on"] else _("off")
        light = light_name(str(args.get("name", "")), labels)
        return _("switch the %(light)s light %(state)s") % {"light": light, "state": state}
    if tool == "set_alarm_state" and isinstance(args.get("armed"), bool):
        return _("arm the alarm") if args["armed"] else _("disarm the alarm")
    if tool == "automation_set_enabled" and isinstance(args.get("enabled"), bool):
        verb = _("enable") if args["enabled"] else _("disable")
        phrase = _("%(verb)s the automation '%(name)s'") % {"verb": verb, "name": args.get("name", "")}
        if "version" in args:
            phrase += " " + _("(version %(version)s)") % {"version": args["version"]}
        return phrase
    shown = title or tool
    if "__" in tool:
        device, _sep, part = tool.partition("__")
        named = (device_labels or {}).get(device) or device
        return _("run %(tool)s on %(device)s") % {"tool": title or part, "device": named}
    if not args:
        return _("run %(tool)s") % {"tool": shown}
    return _("run %(tool)s with %(args)s") % {"tool": shown, "args": readable(args)}


def request_sentence(
    actor: str,
    interface: str,
    tool: str,
    arguments: Any,
    *,
    title: str | None = None,
    light_labels: Mapping[str, str] | None = None,
    device_labels: Mapping[str, str] | None = None,
) -> str:
    """ "Claude (through /mcp) asks to disarm the alarm"."""
    what = action_phrase(tool, arguments, title=title, light_labels=light_labels, device_labels=device_labels)
    return _("%(actor)s (through %(door)s) asks to %(what)s") % {
        "actor": actor,
        "door": door(interface),
        "what": what,
    }


def _where(interface: str) -> str:
    """How an event's door ends its sentence ("from the dashboard", "through /mcp"); nothing
    for the hub itself or an automation (the actor says which)."""
    if interface in ("system", "automation", ""):
        return ""
    if interface in ("dashboard", "admin"):
        return " " + _("from %(door)s") % {"door": door(interface)}
    return " " + _("through %(door)s") % {"door": door(interface)}


def _who(actor: str, interface: str) -> str:
    if interface == "automation" and actor:
        return _("The automation '%(name)s'") % {"name": actor}
    return actor or _("The hub")


def event_sentence(
    event: Any, light_labels: Mapping[str, str] | None = None, device_labels: Mapping[str, str] | None = None
) -> str:
    """One audit event (`audit.models.Event`) as a sentence: who did what, through which door."""
    labels, devices = light_labels or {}, device_labels or {}
    action, target = event.action, event.target or ""
    name = target.partition(":")[2] or target
    if target.startswith("agent:"):
        name = devices.get(name) or name
    after = event.after if isinstance(event.after, dict) else {}
    who, where = _who(event.actor, event.interface), _where(event.interface)
    tail = ""  # after the door: how a call ended
    if action == "light.set" and "on" in after:
        state = _("on") if after["on"] else _("off")
        what = _("switched the %(light)s light %(state)s") % {
            "light": light_name(name, labels),
            "state": state,
        }
    elif action == "alarm.set" and "armed" in after:
        what = _("armed the alarm") if after["armed"] else _("disarmed the alarm")
    elif action == "person.set" and "present" in after:
        what = (_("marked %(name)s home") if after["present"] else _("marked %(name)s away")) % {"name": name}
    elif action == "tool.call":
        device, _sep, part = name.partition("__")
        if part and device in devices:
            what = _("ran %(tool)s on %(device)s") % {"tool": part, "device": devices[device]}
        else:
            what = _("called %(tool)s") % {"tool": name}
        if after.get("ok") is False:
            tail = ", " + _("which failed")
        if after.get("confirmation"):
            tail += f" ({after['confirmation']})"
    elif action == "agent.call" and isinstance(event.before, dict) and event.before.get("tool"):
        what = _("ran %(tool)s on %(device)s") % {"tool": event.before["tool"], "device": name}
        if after.get("ok") is False:
            tail = ", " + _("which failed")
    elif action == "fel.batch":
        what = _("processed a batch of %(count)s invoices") % {"count": after.get("count", 0)}
        if after.get("invalid"):
            what += " " + _("(%(invalid)s with issues)") % {"invalid": after["invalid"]}
    elif action in VERBS:
        what = _(VERBS[action]).format(name=name)
    else:
        what = _("did %(action)s on %(target)s") % {"action": action, "target": target or "—"}
    return f"{who} {what}{where}{tail}"


def targets_named(query: str, named: Iterable[tuple[str, str]]) -> list[str]:
    """The targets whose display name contains `query`, case- and accent-insensitive:
    "Salón" -> ["light:salon"] given ("light:salon", "Salón")."""
    wanted = fold(query)
    return sorted({target for target, display in named if wanted and wanted in fold(display)})
