"""Every topic the hub uses, in one place (docs/MQTT.md describes them for device makers)."""

from __future__ import annotations

import re
from typing import TypeGuard

TELEMETRY = "office/#"  # every shape, so that a wrong one is recorded as rejected
DISCOVERY = "mcp/discovery"
RESPONSES = "mcp/+/response/+"
AGENT_STATUS = "mcp/+/status"  # an agent's last will ("offline") and its "online"
HUB_STATUS = "homehub/status"  # the hub's birth ("online") and "offline", retained
WORKERS = "homehub/workers"  # WORKERS/{group}/{client id}: each grouped worker's presence, retained
LIGHT_COMMANDS = "homehub/lights/+/set"
ALARM_COMMANDS = "homehub/alarm/set"
ALARM_STATE = "homehub/alarm/state"

# An agent id becomes a topic level: "/", "+" or "#" in it could reach other agents' topics.
AGENT_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


def shared(topic: str, group: str) -> str:
    """`$share/<group>/<topic>` when workers split the load, else the topic itself."""
    return f"$share/{group}/{topic}" if group else topic


def worker_status(group: str, client_id: str) -> str:
    """Where a worker of a shared group says `online` (retained) and its last will `offline`."""
    return f"{WORKERS}/{group}/{client_id}"


def worker_of(topic: str, group: str) -> str | None:
    """The client id of `homehub/workers/{group}/{client id}`."""
    prefix = f"{WORKERS}/{group}/"
    rest = topic[len(prefix) :] if topic.startswith(prefix) else ""
    return rest if rest and "/" not in rest else None


# Delivery probes: each worker publishes on its own probe topics and must hear them back
# (devices/mqtt/subscriptions.py). One per topic tree the worker reads, inside what the
# shipped ACL grants; ingestion and the shared group's other members ignore them.
PROBE_MARK = "_homehub"


def probes(client_id: str) -> dict[str, str]:
    """Topic tree -> this worker's probe topic in it."""
    return {
        "office": f"office/{PROBE_MARK}/probe/{client_id}/delivery",
        "mcp": f"mcp/{PROBE_MARK}/probe/{client_id}",
        "homehub": f"homehub/{PROBE_MARK}/probe/{client_id}",
    }


def is_probe(topic: str) -> bool:
    return levels(topic)[1:2] == [PROBE_MARK]


def tree(topic_filter: str) -> str:
    """The first level of a topic filter, past a `$share/<group>/` prefix."""
    parts = levels(topic_filter)
    return parts[2] if parts[0] == "$share" and len(parts) > 2 else parts[0]


def valid_agent_id(agent_id: object) -> TypeGuard[str]:
    return isinstance(agent_id, str) and AGENT_ID.fullmatch(agent_id) is not None and agent_id != PROBE_MARK


def request(agent_id: str, method: str) -> str:
    return f"mcp/{agent_id}/request/{method}"


def light_state(name: str) -> str:
    return f"homehub/lights/{name}/state"


def levels(topic: str) -> list[str]:
    return topic.split("/")


def response_of(topic: str) -> tuple[str, str] | None:
    """(agent id, request id) of `mcp/{agent_id}/response/{request_id}`."""
    parts = levels(topic)
    if len(parts) == 4 and parts[0] == "mcp" and parts[2] == "response":
        return parts[1], parts[3]
    return None


def status_of(topic: str) -> str | None:
    """The agent id of `mcp/{agent_id}/status`."""
    parts = levels(topic)
    if len(parts) == 3 and parts[0] == "mcp" and parts[2] == "status":
        return parts[1]
    return None


def light_command_of(topic: str) -> str | None:
    """The light name of `homehub/lights/{name}/set`."""
    parts = levels(topic)
    if len(parts) == 4 and parts[:2] == ["homehub", "lights"] and parts[3] == "set":
        return parts[2]
    return None
