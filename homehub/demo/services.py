"""What the demo writes before it starts, idempotently: the home, its agents (with fresh
device tokens), one MCP token, and the history its sensors would have recorded."""

from __future__ import annotations

import time
from datetime import tzinfo

from audit.models import Event
from automations.services import map_zone, place_agent
from devices.agents.services import register_agent
from devices.home.services import seed_home
from devices.soms.simulator import UNITS
from devices.telemetry.models import TelemetryReading
from devices.telemetry.parsing import Reading
from devices.telemetry.services import Batch, store_batch
from homehub.demo.catalogue import ZONE_ROOMS, DemoAgent
from homehub.demo.climate import Room
from mcp_endpoint.auth.scopes import scopes
from mcp_endpoint.auth.tokens import create_token, revoke_all
from mcp_endpoint.models import AccessToken

ACTOR = "demo"
TOKEN_NAME = "demo"
HISTORY_SECONDS = 7 * 86400  # the Sensors page's longest chart
HISTORY_STEP = 600
DEVICE_TYPE = "sensor"


def register_agents(agents: list[DemoAgent]) -> dict[str, str]:
    """Register every demo agent (again: a second start changes nothing but the device
    tokens, which only the demo's simulators know); the WebSocket agents' tokens by id."""
    tokens = {}
    for agent in agents:
        _, token = register_agent(
            agent.agent_id,
            transport=agent.transport,
            name=agent.name,
            actor=ACTOR,
            interface=Event.Interface.SYSTEM,
        )
        if token is not None:
            tokens[agent.agent_id] = token
    return tokens


def fresh_mcp_token() -> str:
    """A new all-scopes token for the demo's MCP clients; earlier demo tokens are revoked."""
    revoke_all(AccessToken.objects.filter(name=TOKEN_NAME), actor="demo", interface=Event.Interface.SYSTEM)
    return create_token(TOKEN_NAME, list(scopes.names()), actor="demo", interface=Event.Interface.SYSTEM)[1]


def readings_at(room: Room, at: float, tz: tzinfo) -> list[Reading]:
    return [
        Reading(room.zone, DEVICE_TYPE, room.device_id, channel, room.value(channel, at, tz), unit, at)
        for channel, unit in UNITS.items()
    ]


def backfill(rooms: list[Room], tz: tzinfo, *, now: float | None = None) -> int:
    """Write the readings each room's sensors would have sent over the last week, from its
    newest stored reading on (nothing twice); returns how many."""
    now = now if now is not None else time.time()
    batch = Batch()
    for room in rooms:
        newest = (
            TelemetryReading.objects.filter(device_id=room.device_id, zone=room.zone)
            .order_by("-measured_at")
            .values_list("measured_at", flat=True)
            .first()
        )
        start = max(now - HISTORY_SECONDS, newest.timestamp() + HISTORY_STEP if newest else 0)
        at = start - start % HISTORY_STEP
        while at < now:
            batch.readings.extend(readings_at(room, at, tz))
            at += HISTORY_STEP
    if batch.readings:
        store_batch(batch)
    return len(batch.readings)


def prepare(agents: list[DemoAgent], tz: tzinfo) -> tuple[dict[str, str], str]:
    """Everything the demo needs in the database; the device tokens and the MCP token."""
    seed_home()
    tokens = register_agents(agents)
    for agent in agents:
        room = ZONE_ROOMS.get(agent.room.zone)
        if room is not None:
            map_zone(agent.room.zone, room, actor=ACTOR, interface=Event.Interface.SYSTEM)
            place_agent(agent.agent_id, room, actor=ACTOR, interface=Event.Interface.SYSTEM)
    backfill([a.room for a in agents], tz)
    return tokens, fresh_mcp_token()
