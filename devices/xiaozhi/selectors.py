"""Reads of stock xiaozhi devices' bindings, for the dashboard and the admin."""

from __future__ import annotations

from datetime import datetime
from typing import Any, TypedDict

from devices.xiaozhi.models import Activation


class Binding(TypedDict):
    """A device's latest binding: `bound` while it lasts, else when it ended."""

    device_id: str
    bound: bool
    bound_at: datetime
    bound_by: str
    unbound_at: datetime | None
    board: dict[str, Any]
    firmware: dict[str, Any]
    last_check_in: datetime


def bindings(device_ids: list[str] | None = None) -> dict[str, Binding]:
    """Each device's latest binding (current or ended), by device id (its agent's id)."""
    rows = Activation.objects.filter(bound_at__isnull=False)
    if device_ids is not None:
        rows = rows.filter(device_id__in=device_ids)
    found: dict[str, Binding] = {}
    for row in rows.defer("system_info").order_by("device_id", "-bound_at"):
        if row.device_id not in found and row.bound_at is not None:
            found[row.device_id] = {
                "device_id": row.device_id,
                "bound": row.unbound_at is None,
                "bound_at": row.bound_at,
                "bound_by": row.bound_by,
                "unbound_at": row.unbound_at,
                "board": row.board,
                "firmware": row.firmware,
                "last_check_in": row.last_check_in,
            }
    return found
