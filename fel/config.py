"""FEL settings as the pipeline needs them, with the per-call overrides of `fel_render`."""

from __future__ import annotations

import os

from django.conf import settings

from fel.paths import existing_file, fel_root
from fel.render import Branding, load_logo
from fel.themes import get_theme


def max_xml_bytes() -> int:
    return int(settings.FEL_MAX_XML_BYTES)


def output_dir() -> str:
    """The default output folder; a relative FEL_OUTPUT_DIR is taken inside FEL_ROOT."""
    return str(fel_root() / settings.FEL_OUTPUT_DIR)


def batch_workers() -> int:
    return int(settings.FEL_BATCH_WORKERS) or os.cpu_count() or 1


def branding(logo_path: str | None = None, theme: str | None = None) -> Branding:
    """Settings' branding; `logo_path` and `theme` (when given) win. The logo must be inside FEL_ROOT."""
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
    )
