"""Telling every hub process that an automation was saved, enabled, disabled or deleted: the
engine that holds it reloads it (message type `automations.changed` on the `automations` group,
sent once the change commits)."""

from common.feed import announce

AUTOMATIONS_GROUP = "automations"
AUTOMATIONS_CHANGED = "automations.changed"


def announce_automation_change(name: str) -> None:
    announce(AUTOMATIONS_GROUP, {"type": AUTOMATIONS_CHANGED, "name": name})
