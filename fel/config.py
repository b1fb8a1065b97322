"""FEL settings as the pipeline needs them, with the per-call overrides of `fel_render`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from django.conf import settings

from fel.errors import FelError
from fel.paths import existing_file, fel_root
from fel.themes import get_theme
from fel.typefaces import FAMILIES, Typeface, find_typeface

if TYPE_CHECKING:
    from fel.render import Branding

QR_SIZE_RANGE = (72, 180)  # points: an inch keeps SAT's URL scannable; more crowds the totals
TOP_BAR_RANGE = (0, 72)


def max_xml_bytes() -> int:
    return int(settings.FEL_MAX_XML_BYTES)


def output_dir() -> str:
    """The default output folder; a relative FEL_OUTPUT_DIR is taken inside FEL_ROOT."""
    return str(fel_root() / settings.FEL_OUTPUT_DIR)


def batch_workers() -> int:
    return int(settings.FEL_BATCH_WORKERS) or os.cpu_count() or 1


def branding(logo_path: str | None = None, theme: str | None = None) -> Branding:
    """Settings' branding; `logo_path` and `theme` (when given) win. The logo must be inside FEL_ROOT."""
    from fel.render import Branding, load_logo  # reportlab, loaded where PDFs are made

    logo = logo_path or settings.FEL_LOGO_PATH
    if logo:
        logo = str(existing_file(logo, "logo"))
        load_logo(logo)  # refuse a file that is not an image now, not once per document
    return Branding(
        theme=get_theme(theme or settings.FEL_THEME),
        logo_path=logo or None,
        website=settings.FEL_WEBSITE,
        phone=settings.FEL_PHONE,
        email=settings.FEL_EMAIL,
        typeface=typeface(),
        qr_size=_points("FEL_QR_SIZE", settings.FEL_QR_SIZE, QR_SIZE_RANGE),
        top_bar_height=_points("FEL_TOP_BAR_HEIGHT", settings.FEL_TOP_BAR_HEIGHT, TOP_BAR_RANGE),
    )


def typeface() -> Typeface:
    """FEL_ACTIVE_FONT's family, from its FEL_FONT_DIR_* (relative to the project folder)."""
    folders = {name: getattr(settings, family.setting) for name, family in FAMILIES.items()}
    return find_typeface(
        settings.FEL_ACTIVE_FONT,
        {name: Path(settings.BASE_DIR) / folder for name, folder in folders.items() if folder},
    )


def _points(name: str, value: float, bounds: tuple[float, float]) -> float:
    low, high = bounds
    if not low <= value <= high:
        raise FelError(f"{name} debe estar entre {low} y {high} puntos; vale {value:g}.")
    return float(value)
