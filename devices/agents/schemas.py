"""The agents' row shapes that clients see, each declared once: what the selectors return, the
REST API answers and `list_agents` declares as its output (`common.schemas`). Their names are
the ones clients see (OpenAPI components, MCP `$defs`)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, NotRequired

from pydantic import Field
from typing_extensions import TypedDict


class ToolOut(TypedDict):
    name: str
    description: str
    input_schema: dict[str, Any]
    available: bool


class AgentOut(TypedDict):
    # An agent in detail (dashboard, REST API), approved or pending.
    agent_id: str
    name: str
    transport: str
    approved: bool
    online: bool
    connects_on_demand: bool
    last_seen: datetime | None
    server_info: dict[str, Any]
    tools: list[ToolOut]


# `list_agents`, the MCP tool: approved agents, times in ISO 8601


class AgentToolInfo(TypedDict):
    name: str
    description: str
    available: bool
    gateway_name: NotRequired[
        Annotated[str | None, Field(None, description="The name to call it by directly, while online")]
    ]


class AgentInfo(TypedDict):
    agent_id: str
    name: str
    transport: str
    online: bool
    connects_on_demand: Annotated[
        bool,
        Field(
            description="The device connects only while someone is talking to it (stock xiaozhi "
            "firmware): offline is its usual state, and its tools can be called only while it is online"
        ),
    ]
    last_seen: Annotated[str | None, Field(description="When the device was last reachable (ISO 8601)")]
    server_info: dict[str, Any]
    tools: list[AgentToolInfo]


class AgentList(TypedDict):
    agents: list[AgentInfo]
