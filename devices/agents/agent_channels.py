"""Channel-layer names and messages that tie ESP32 agents to every hub process.

- Each connected device's link (`devices.agents.link`) joins its agent's group; the gateway
  sends tool calls there, so a call reaches whichever process holds the device's connection.
  A device connected to the caller's own process is called directly (`link.local_links`).
- Every process's gateway listens on `AGENT_CHANGES_GROUP`; a device coming, going or
  being rediscovered is announced there, so each process refreshes its view of the
  agents' tools and tells its MCP sessions that the tool list changed.
"""

from __future__ import annotations

import hashlib

from common.feed import announce

AGENT_CHANGES_GROUP = "devices.agents.changed"

# Message types (Channels maps "agent.call" to the consumer method `agent_call`). Every message
# on an agent's group names it (`agent_id`): an MQTT worker's agents share one channel.
CALL = "agent.call"
REPLY = "agent.reply"
APPROVED = "agent.approved"
REPLACED = "agent.replaced"
CHANGED = "agents.changed"


def agent_group(agent_id: str) -> str:
    """The group of an agent's live connection (agent ids may hold characters, such as a
    MAC's colons, that group names may not)."""
    return "agent." + hashlib.sha256(agent_id.encode()).hexdigest()[:32]


def announce_agent_change_on_commit(agent_id: str) -> None:
    """After commit, tell every process that this agent's tools or presence changed."""
    announce(AGENT_CHANGES_GROUP, {"type": CHANGED, "agent_id": agent_id})


def tell_agent_on_commit(agent_id: str, message_type: str) -> None:
    """After commit, send a control message (such as `APPROVED`) to the agent's connection."""
    announce(agent_group(agent_id), {"type": message_type, "agent_id": agent_id})
