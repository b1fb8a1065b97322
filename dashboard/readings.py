"""Sensor readings as the household reads them: named (the owner's label, else the room and
the channel), in the channel's unit and rounding, and marked when stale. Pure shaping of what
the selectors read; the pages and their tests share it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any, TypedDict

from django.utils.formats import get_format
from django.utils.translation import gettext

from devices.telemetry import units


class Tile(TypedDict):
    path: str
    zone: str
    device_type: str
    device_id: str
    channel: str
    name: str  # the label, or the default one
    labelled: bool  # an owner named it
    kind: str  # the channel's name: "Temperature", "CO₂"
    value: str  # rounded, or a state's word
    unit: str
    measured_at: datetime
    stale: bool


def localized(text: str) -> str:
    """A rounded reading (`21.6`, `21.6 °C`) with the active language's decimal separator
    (`21,6 °C` in Spanish); a state's word stays as it is."""
    number, space, rest = text.partition(" ")
    try:
        float(number)
    except ValueError:
        return text
    return number.replace(".", get_format("DECIMAL_SEPARATOR")) + space + rest


def default_label(room: str | None, zone: str, channel: str) -> str:
    """`Salón temperature`, `Office CO₂`: where it is and what it measures (never a MAC)."""
    place = room or zone.replace("_", " ").strip().capitalize()
    kind = str(units.channel(channel).name)
    if kind[1:2].islower():  # "Temperature" reads "temperature"; "CO₂" and "VOC" keep their case
        kind = kind[0].lower() + kind[1:]
    return gettext("%(place)s %(kind)s") % {"place": place, "kind": kind}


def tiles(
    rows: Iterable[Mapping[str, Any]],
    *,
    rooms_by_zone: Mapping[str, str],
    labels: Mapping[str, str],
    stale: set[str],
) -> list[Tile]:
    """`rows` as the telemetry or rooms selectors give them (`measured_at` a datetime or its
    ISO text), shaped for a tile."""
    shaped: list[Tile] = []
    for row in rows:
        value, unit = units.shown(row["channel"], row["value"], row["unit"])
        measured_at = row["measured_at"]
        if isinstance(measured_at, str):
            measured_at = datetime.fromisoformat(measured_at)
        label = labels.get(row["path"], "")
        shaped.append(
            {
                "path": row["path"],
                "zone": row["zone"],
                "device_type": row["device_type"],
                "device_id": row["device_id"],
                "channel": row["channel"],
                "name": label or default_label(rooms_by_zone.get(row["zone"]), row["zone"], row["channel"]),
                "labelled": bool(label),
                "kind": str(units.channel(row["channel"], row["unit"]).name),
                "value": localized(value),
                "unit": unit,
                "measured_at": measured_at,
                "stale": row["path"] in stale,
            }
        )
    return shaped
