"""Channel-layer names and messages that tie ESP32 agents to every hub process.

- Each connected device's consumer joins its agent's group; the gateway sends tool calls
  there, so a call reaches whichever process holds the socket.
  A device connected to the caller's own process is called directly (`local_devices`).
- Every process's gateway listens on `AGENT_CHANGES_GROUP`; a device coming, going or
  being rediscovered is announced there, so each process refreshes its view of the
  agents' tools and tells its MCP sessions that the tool list changed.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from common.feed import announce
from mcp_endpoint.client import ConnectionLost, McpClient, RemoteError, RequestTimeout

logger = logging.getLogger(__name__)

AGENT_CHANGES_GROUP = "devices.agents.changed"

# Devices connected to this process: agent id -> `serve(tool, arguments, timeout)`, which
# returns the reply a remote caller would get. Calls to them skip the channel layer.
local_devices: dict[str, Callable[[str, dict[str, Any], float], Awaitable[dict[str, Any]]]] = {}

# Message types (Channels maps "agent.call" to the consumer method `agent_call`).
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
    announce(agent_group(agent_id), {"type": message_type})


async def call_reply(
    client: McpClient | None, agent_id: str, tool: str, arguments: dict[str, Any], timeout: float
) -> dict[str, Any]:
    """Call a device's tool and say how it went, in the form the gateway expects from any
    transport: `{"result": ...}`, or `{"failure": ..., ...}` saying why not."""
    try:
        if client is None:
            raise ConnectionLost("the device does not speak MCP")
        return {"result": await client.call_tool(tool, arguments, timeout=timeout)}
    except RequestTimeout:
        return {"failure": "timeout", "timeout": timeout}
    except ConnectionLost as exc:
        return {"failure": "disconnected", "message": str(exc)}
    except RemoteError as exc:
        return {"failure": "device", "message": exc.message, "code": exc.code}
    except Exception as exc:  # the caller must hear back, whatever went wrong
        logger.exception("device %s: call failed", agent_id)
        return {"failure": "error", "message": str(exc) or type(exc).__name__}
