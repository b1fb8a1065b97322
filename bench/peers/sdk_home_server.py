"""The benchmark's peer: seed 000's six home tools on the official MCP SDK's `MCPServer`.

Same names, input and output shapes and Spanish error texts as HomeHub's
`devices/mcp_tools.py`, but the home lives in memory (no database, no audit, no
broadcast) and the tools are plain async functions on the event loop, which is the
cheapest way the SDK can run them. `sdk_durable_home.py` is the same server with writes
that commit to a database first (the benchmarks' write peer). Served over stdio:

    .venv/bin/python bench/peers/sdk_home_server.py
"""

from __future__ import annotations

import json
import logging
from typing import Annotated, NotRequired, TypedDict

from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel

LIGHTS = ("salon", "cocina", "dormitorio", "bano", "garage")
PEOPLE = ("Carlos", "Ana")

READ = ToolAnnotations(readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False)
WRITE = ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=True, openWorldHint=False)
DESTRUCTIVE = ToolAnnotations(
    readOnlyHint=False, destructiveHint=True, idempotentHint=True, openWorldHint=False
)


class Presence(BaseModel):
    present: bool
    known_people: list[str]


class AlarmStatus(BaseModel):
    armed: bool


class LightsOn(BaseModel):
    on: list[str]


class AllStates(BaseModel):
    lights: dict[str, bool]
    alarm: bool
    presence: Presence


# `{"ok": true}`, or `{"ok": false, "error": ...}`: no `"error": null` on success.
class Outcome(TypedDict):
    ok: bool
    error: NotRequired[str]


class Home:
    """The home in memory. `DurableHome` (`sdk_durable_home.py`) commits each write first."""

    def __init__(self) -> None:
        self.lights = dict.fromkeys(LIGHTS, False)
        self.people = dict.fromkeys(PEOPLE, False)
        self.armed = False

    def presence(self) -> Presence:
        names = [name for name, here in self.people.items() if here]
        return Presence(present=bool(names), known_people=names)

    def set_light(self, name: str, on: bool) -> None:
        self.lights[name] = on

    def set_alarm(self, armed: bool) -> None:
        self.armed = armed


def build_server(home: Home, name: str = "sdk-home") -> MCPServer:
    """An `MCPServer` with seed 000's six tools on `home`."""
    server = MCPServer(name, version="0.1.0", log_level="WARNING")

    @server.tool(annotations=READ)
    async def get_presence() -> Presence:
        """Obtiene el estado del detector de presencia"""
        return home.presence()

    @server.tool(annotations=READ)
    async def get_alarm_status() -> AlarmStatus:
        """Consulta si la alarma está armada"""
        return AlarmStatus(armed=home.armed)

    @server.tool(annotations=READ)
    async def list_lights_on() -> LightsOn:
        """Lista los nombres de las luces que están encendidas"""
        return LightsOn(on=[name for name, on in home.lights.items() if on])

    @server.tool(annotations=WRITE)
    async def set_light_state(name: str, on: bool) -> Annotated[CallToolResult, Outcome]:
        """Enciende o apaga una luz específica"""
        if name not in home.lights:
            error = f"Luz '{name}' no encontrada"
            structured = {"ok": False, "error": error}
            text = json.dumps(structured, ensure_ascii=False)
            return CallToolResult(
                content=[TextContent(type="text", text=text)], structured_content=structured, is_error=True
            )
        home.set_light(name, on)
        return {"ok": True}

    @server.tool(annotations=DESTRUCTIVE)
    async def set_alarm_state(armed: bool) -> Outcome:
        """Arma o desarma la alarma"""
        home.set_alarm(armed)
        return {"ok": True}

    @server.tool(annotations=READ)
    async def get_all_states() -> AllStates:
        """Obtiene un snapshot completo del estado del sistema"""
        return AllStates(lights=dict(home.lights), alarm=home.armed, presence=home.presence())

    return server


home = Home()
server = build_server(home)


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    server.run("stdio")
