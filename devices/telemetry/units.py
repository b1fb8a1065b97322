"""How each channel reads to a person: its name, its unit and how far its values are rounded
(one table for every page), and presence as Occupied/Empty instead of 1/0."""

from __future__ import annotations

from dataclasses import dataclass

from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy


@dataclass(frozen=True, slots=True)
class Channel:
    name: str | Promise
    unit: str  # shown after the value; "" for a state
    decimals: int
    states: tuple[str | Promise, str | Promise] | None = None  # (0, 1) for a two-state channel


# a door's or a window's states (Spanish: "Cerrada", "Abierta"; not the "Open" of a button)
SHUT_OPEN = (pgettext_lazy("door or window", "Closed"), pgettext_lazy("door or window", "Open"))

CHANNELS: dict[str, Channel] = {
    "temperature": Channel(_("Temperature"), "°C", 1),
    "humidity": Channel(_("Humidity"), "%", 0),
    "co2": Channel(_("CO₂"), "ppm", 0),
    "presence": Channel(_("Presence"), "", 0, (_("Empty"), _("Occupied"))),
    "occupancy": Channel(_("Occupancy"), "", 0, (_("Empty"), _("Occupied"))),
    "motion": Channel(_("Motion"), "", 0, (_("Still"), _("Motion"))),
    "door": Channel(_("Door"), "", 0, SHUT_OPEN),
    "window": Channel(_("Window"), "", 0, SHUT_OPEN),
    "pressure": Channel(_("Pressure"), "hPa", 0),
    "illuminance": Channel(_("Light level"), "lx", 0),
    "light": Channel(_("Light level"), "lx", 0),
    "noise": Channel(_("Noise"), "dB", 0),
    "voc": Channel(_("VOC"), "ppb", 0),
    "pm25": Channel(_("PM2.5"), "µg/m³", 0),
    "pm10": Channel(_("PM10"), "µg/m³", 0),
    "battery": Channel(_("Battery"), "%", 0),
    "power": Channel(_("Power"), "W", 0),
    "energy": Channel(_("Energy"), "kWh", 2),
    "voltage": Channel(_("Voltage"), "V", 0),
}

# A unit as devices write it -> as a person reads it (for channels the table does not know).
UNIT_SPELLING = {"c": "°C", "°c": "°C", "degc": "°C", "f": "°F", "pct": "%", "percent": "%"}


def channel(name: str, raw_unit: str = "") -> Channel:
    """The channel's row; an unknown channel is named from its slug and keeps the device's
    unit (spelled as people write it), with one decimal."""
    known = CHANNELS.get(name.lower())
    if known is not None:
        return known
    unit = UNIT_SPELLING.get(raw_unit.strip().lower(), raw_unit.strip())
    return Channel(name.replace("_", " ").strip().capitalize() or name, unit, 1)


def is_state(name: str) -> bool:
    """A two-state channel (presence, a door): drawn as bands, shown as words."""
    return channel(name).states is not None


def rounded(value: float, decimals: int) -> str:
    """`value` to `decimals` places, without a trailing `.0` or a `-0`."""
    text = f"{value:.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in {"-0", ""} else text


def shown(name: str, value: float, raw_unit: str = "") -> tuple[str, str]:
    """(value, unit) as a person reads them: `("21.6", "°C")`, `("Occupied", "")`."""
    row = channel(name, raw_unit)
    if row.states is not None:
        return str(row.states[1] if value >= 0.5 else row.states[0]), ""
    return rounded(value, row.decimals), row.unit


def text(name: str, value: float, raw_unit: str = "") -> str:
    """`21.6 °C`, `45 %`, `Occupied`."""
    number, unit = shown(name, value, raw_unit)
    return f"{number} {unit}" if unit else number
