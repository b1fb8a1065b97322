"""The PDF's typefaces: seed 002's `FEL_ACTIVE_FONT` picks a family, `FEL_FONT_DIR_MONTSERRAT`
and `FEL_FONT_DIR_ROBOTOMONO` say where its TrueType files are (default: the copies shipped in
`fel/fonts/`, see its README for their origin and licence).

The faces are embedded in every PDF (reportlab keeps only the glyphs a document uses), so
accented Spanish prints with the same letters in any viewer and the text stays extractable.
A family is checked when the settings are read (`fel.config.branding`), before any document:
a missing or unreadable file is a clear error then, never a failure half-way through a batch.
Django-free like the rest of the pipeline: batch workers register the files themselves.
"""

from __future__ import annotations

import hashlib
import os
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from fel.errors import FelError

FONT_DIR = Path(__file__).resolve().parent / "fonts"
STYLES = ("Regular", "Bold")


class FontError(FelError):
    """A font that cannot be used (message in Spanish)."""


@dataclass(frozen=True, slots=True)
class Family:
    file_stem: str  # the files are <file_stem>-Regular.ttf and <file_stem>-Bold.ttf
    setting: str  # the setting that names its folder


FAMILIES = {
    "montserrat": Family("Montserrat", "FEL_FONT_DIR_MONTSERRAT"),
    "robotomono": Family("RobotoMono", "FEL_FONT_DIR_ROBOTOMONO"),
}
DEFAULT_FAMILY = "montserrat"


@dataclass(frozen=True, slots=True)
class Typeface:
    """The active family's regular and bold TrueType files (absolute paths)."""

    family: str
    regular: str
    bold: str


SHIPPED = Typeface(
    DEFAULT_FAMILY,
    *(str(FONT_DIR / DEFAULT_FAMILY / f"{FAMILIES[DEFAULT_FAMILY].file_stem}-{s}.ttf") for s in STYLES),
)


def find_typeface(name: str | None, folders: Mapping[str, str | Path] | None = None) -> Typeface:
    """The family `name` (case-insensitive) from its folder in `folders` (missing or empty: the
    shipped copy), each face found directly in it or in its `static/` subfolder, and loaded."""
    key = (name or DEFAULT_FAMILY).strip().lower()
    family = FAMILIES.get(key)
    if family is None:
        raise FontError(f"Fuente desconocida «{name}» (FEL_ACTIVE_FONT): use {' o '.join(FAMILIES)}.")
    folder = (folders or {}).get(key)
    where = Path(folder) if folder else FONT_DIR / key
    if not where.is_dir():
        raise FontError(f"No existe la carpeta de la fuente {family.file_stem}: {where} ({family.setting}).")
    faces = []
    for style in STYLES:
        file_name = f"{family.file_stem}-{style}.ttf"
        found = next((p for p in (where / file_name, where / "static" / file_name) if p.is_file()), None)
        if found is None:
            raise FontError(f"Falta {file_name} en la carpeta de la fuente {where} ({family.setting}).")
        faces.append(str(found.resolve()))
    typeface = Typeface(key, *faces)
    font_names(typeface)
    return typeface


def font_names(typeface: Typeface) -> tuple[str, str]:
    """reportlab's names for the regular and bold faces, registered once per process and file
    version (a name per file, so two families or versions never replace each other)."""
    return _registered(typeface.regular, *_version(typeface.regular)), _registered(
        typeface.bold, *_version(typeface.bold)
    )


def _version(path: str) -> tuple[int, int]:
    try:
        stat = os.stat(path)
    except OSError as exc:
        raise FontError(f"No se puede leer la fuente {path}: {exc.strerror}.") from None
    return stat.st_mtime_ns, stat.st_size


@lru_cache(maxsize=16)
def _registered(path: str, mtime_ns: int, size: int) -> str:
    # reportlab loads with the first font registered, where PDFs are made, not with every
    # command of the hub (see fel.processing).
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.ttfonts import TTFError, TTFont

    name = f"{Path(path).stem}-{hashlib.sha256(f'{path}:{mtime_ns}:{size}'.encode()).hexdigest()[:8]}"
    try:
        pdfmetrics.registerFont(TTFont(name, path))
    except (OSError, TTFError, struct.error, ValueError, KeyError, IndexError) as exc:  # a damaged file
        raise FontError(f"{path} no es una fuente TrueType legible ({exc}).") from None
    return name
