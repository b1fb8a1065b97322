"""The agents' row shapes that clients see, each declared once: what the selectors return and
the REST API answers (`common.schemas`). Their names are the OpenAPI components'."""

from __future__ import annotations

from datetime import datetime
from typing import Any

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
