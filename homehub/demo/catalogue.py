"""The demo's agents and the rooms their sensors are in."""

from __future__ import annotations

from dataclasses import dataclass

from devices.agents.models import Agent
from homehub.demo.climate import Room


@dataclass(frozen=True)
class DemoAgent:
    agent_id: str
    name: str
    transport: str
    room: Room


# WebSocket ids are MAC addresses (locally administered), as xiaozhi firmware sends them;
# MQTT ids follow SOMS's style.
AGENTS = [
    DemoAgent(
        "02:00:00:de:00:01",
        "Living room speaker (demo)",
        Agent.Transport.WS,
        Room("02:00:00:de:00:01", "living_room", base=21.8, swing=1.6, occupancy=0.8),
    ),
    DemoAgent(
        "02:00:00:de:00:02",
        "Kitchen display (demo)",
        Agent.Transport.WS,
        Room("02:00:00:de:00:02", "kitchen", base=22.5, swing=2.2, occupancy=0.5),
    ),
    DemoAgent(
        "demo_office",
        "Office sensor board (demo)",
        Agent.Transport.MQTT,
        Room("demo_office", "office", base=21.0, swing=2.0, occupancy=0.4),
    ),
    DemoAgent(
        "demo_bedroom",
        "Bedroom sensor board (demo)",
        Agent.Transport.MQTT,
        Room("demo_bedroom", "bedroom", base=20.0, swing=1.2, occupancy=0.7),
    ),
]

# The rooms the demo's sensor zones and agents are in (seed 000 names the first three).
ZONE_ROOMS = {"living_room": "Salón", "kitchen": "Cocina", "bedroom": "Dormitorio", "office": "Oficina"}
