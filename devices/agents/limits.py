"""Bounds on what a device may ask of the hub, the same for every transport (applied by
`DeviceLink`, which every device transport shares): how many tools it offers, how long their
names and descriptions are, how many notifications a minute it is heard. A device past a bound
keeps working within it; what is cut or dropped is logged (docs/LIMITS.md).

Without them, a device listing 20,000 tools made the Devices page take 31 s and filled every
LLM's tool list, and one sending 3,000 notifications wrote 3,000 audit rows.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from django.conf import settings

logger = logging.getLogger(__name__)

WINDOW_SECONDS = 60.0


def bounded_tools(agent_id: str, tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tools of a device's `tools/list` that the hub keeps: those with a name of at most
    DEVICE_MAX_TOOL_NAME characters, the first DEVICE_MAX_TOOLS of them, each description cut
    to DEVICE_MAX_TOOL_DESCRIPTION characters."""
    longest, most, description = (
        settings.DEVICE_MAX_TOOL_NAME,
        settings.DEVICE_MAX_TOOLS,
        settings.DEVICE_MAX_TOOL_DESCRIPTION,
    )
    named = [t for t in tools if len(t["name"]) <= longest]
    if len(named) < len(tools):
        logger.warning(
            "device %s: %d tools with a name over %d characters (DEVICE_MAX_TOOL_NAME) are left out",
            agent_id,
            len(tools) - len(named),
            longest,
        )
    if len(named) > most:
        logger.warning(
            "device %s: lists more than %d tools; only the first %d are kept (DEVICE_MAX_TOOLS)",
            agent_id,
            most,
            most,
        )
        named = named[:most]
    kept = []
    cut = 0
    for tool in named:
        text = tool.get("description")
        if isinstance(text, str) and len(text) > description:
            tool = {**tool, "description": text[:description]}
            cut += 1
        kept.append(tool)
    if cut:
        logger.warning(
            "device %s: %d tool descriptions cut to %d characters (DEVICE_MAX_TOOL_DESCRIPTION)",
            agent_id,
            cut,
            description,
        )
    return kept


class NotificationBudget:
    """How many of a device's notifications are heard (audited) in each minute: at most
    DEVICE_NOTIFICATIONS_PER_MINUTE (0: no limit); the rest of that minute's are dropped, said
    once in the log."""

    def __init__(self, agent_id: str) -> None:
        self.agent_id = agent_id
        self.limit = settings.DEVICE_NOTIFICATIONS_PER_MINUTE
        self.started = time.monotonic()
        self.heard = 0

    def allows(self) -> bool:
        now = time.monotonic()
        if now - self.started >= WINDOW_SECONDS:
            self.started, self.heard = now, 0
        self.heard += 1
        if not self.limit or self.heard <= self.limit:
            return True
        if self.heard == self.limit + 1:
            logger.warning(
                "device %s: more than %d notifications in a minute (DEVICE_NOTIFICATIONS_PER_MINUTE): "
                "the rest of this minute's are dropped, not audited",
                self.agent_id,
                self.limit,
            )
        return False
