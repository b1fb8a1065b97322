"""The home as MCP resources (`home://...`) and a prompt that summarises it."""

from __future__ import annotations

import json
from typing import Any

from audit.changes import CHANGE_EVENT, CHANGES_GROUP
from common.storable import is_storable
from devices.home import selectors
from devices.home.models import Light
from mcp_endpoint.engine.providers import Prompt, PromptArgument, Resource, ResourceNotFound, ResourceTemplate

STATE = "home://state"
ALARM = "home://alarm"
PRESENCE = "home://presence"
LIGHT_PREFIX = "home://lights/"


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


class HomeResources:
    scope = "read"
    change_group = CHANGES_GROUP
    change_type = CHANGE_EVENT

    def list_resources(self) -> list[Resource]:
        fixed = [
            Resource(STATE, "home", "El estado completo de la casa (luces, alarma, presencia)"),
            Resource(ALARM, "alarm", "Si la alarma está armada"),
            Resource(PRESENCE, "presence", "Quién está en casa"),
        ]
        lights = [
            Resource(f"{LIGHT_PREFIX}{name}", f"light-{name}", f"La luz {label or name} ({room})")
            for name, label, room in Light.objects.values_list("name", "label", "room")
        ]
        return fixed + lights

    def templates(self) -> list[ResourceTemplate]:
        return [ResourceTemplate(f"{LIGHT_PREFIX}{{name}}", "light", "Una luz por su nombre, p. ej. salon")]

    def handles(self, uri: str) -> bool:
        return uri in (STATE, ALARM, PRESENCE) or uri.startswith(LIGHT_PREFIX)

    def read(self, uri: str) -> str:
        if uri == STATE:
            return _dumps(selectors.get_all_states())
        if uri == ALARM:
            return _dumps(selectors.get_alarm_status())
        if uri == PRESENCE:
            return _dumps(selectors.get_presence())
        if uri.startswith(LIGHT_PREFIX) and is_storable(uri):
            light = (
                Light.objects.filter(name=uri[len(LIGHT_PREFIX) :])
                .values("name", "label", "room", "on")
                .first()
            )
            if light is not None:
                return _dumps(light)
        raise ResourceNotFound(uri)

    def uris_for_event(self, event: dict[str, Any]) -> list[str]:
        kind = event.get("kind")
        if kind == "light":
            return [STATE, f"{LIGHT_PREFIX}{event.get('name')}"]
        if kind == "alarm":
            return [STATE, ALARM]
        if kind == "person":
            return [STATE, PRESENCE]
        if kind == "home":
            return [
                STATE,
                ALARM,
                PRESENCE,
                *(f"{LIGHT_PREFIX}{n}" for n in Light.objects.values_list("name", flat=True)),
            ]
        return []


def render_home_summary(arguments: dict[str, str]) -> list[dict[str, Any]]:
    language = arguments.get("language") or "español"
    state = selectors.get_all_states()
    text = (
        f"Este es el estado actual de la casa en JSON:\n{_dumps(state)}\n\n"
        f"Resúmelo para su dueño en {language}, en dos o tres frases: qué luces están encendidas, "
        "si la alarma está armada y quién está en casa. Señala lo que merece atención, como "
        "luces encendidas o la alarma desarmada cuando no hay nadie."
    )
    return [{"role": "user", "content": {"type": "text", "text": text}}]


HOME_SUMMARY = Prompt(
    name="home_summary",
    title="Resumen de la casa",
    description="Pide al modelo un resumen del estado de la casa y de lo que requiere atención",
    render=render_home_summary,
    arguments=[PromptArgument("language", "Idioma del resumen (por defecto español)")],
)
