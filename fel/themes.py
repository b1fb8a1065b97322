"""Colour themes for the PDF: a named palette, or any `#RRGGBB` as the main colour."""

from __future__ import annotations

import re
from dataclasses import dataclass

from fel.errors import FelError

_HEX_RE = re.compile(r"^#[0-9A-Fa-f]{6}$")


class ThemeError(FelError):
    """Unknown theme name (message in Spanish)."""


@dataclass(frozen=True, slots=True)
class Theme:
    name: str
    primary: str  # bars, table header, total band
    accent: str  # thin rules and labels
    tint: str  # light fills: zebra rows, panels
    ink: str = "#1C2833"
    muted: str = "#5D6D7E"


THEMES = {
    "azul": Theme("azul", primary="#1F4E79", accent="#2E86C1", tint="#EEF4FA"),
    "verde": Theme("verde", primary="#1E6B52", accent="#28A87D", tint="#EDF7F2"),
    "vino": Theme("vino", primary="#7B1E3A", accent="#B0413E", tint="#F9EEF1"),
    "grafito": Theme("grafito", primary="#2F3640", accent="#718093", tint="#F1F3F5"),
}
DEFAULT_THEME = "azul"


def _mix_with_white(hex_colour: str, keep: float) -> str:
    channels = [int(hex_colour[i : i + 2], 16) for i in (1, 3, 5)]
    return "#" + "".join(f"{round(c * keep + 255 * (1 - keep)):02X}" for c in channels)


def get_theme(name: str | None) -> Theme:
    """The theme called `name` (case-insensitive), or one built around a `#RRGGBB` colour."""
    key = (name or DEFAULT_THEME).strip().lower()
    if key in THEMES:
        return THEMES[key]
    if _HEX_RE.match(key):
        colour = key.upper()
        return Theme(
            key, primary=colour, accent=_mix_with_white(colour, 0.75), tint=_mix_with_white(colour, 0.08)
        )
    raise ThemeError(f"Tema desconocido «{name}»: use uno de {', '.join(sorted(THEMES))} o un color #RRGGBB.")
