"""Where FEL tools may read and write: only inside `settings.FEL_ROOT`.

Paths are spelled as in seed 002: relative ones are read from the hub's working folder (the
project root, `settings.BASE_DIR`), so `data/xml/factura.xml` works as written with the
default `FEL_ROOT`; absolute ones are accepted too. Whatever the spelling, the resolved path
must lie inside `FEL_ROOT`. The three ways out get their own message: `..`, an absolute path
elsewhere, and a symlink whose target is outside.
"""

from __future__ import annotations

import os
from pathlib import Path

from django.conf import settings

from fel.errors import FelError


class FelPathError(FelError):
    """A path a FEL tool may not use, or a file or folder that is not there (message in Spanish)."""


def fel_root() -> Path:
    return Path(settings.FEL_ROOT).resolve()


def display_path(path: Path) -> str:
    """How results show a path: relative to the project root when inside it, as seed 002 does."""
    try:
        return str(path.relative_to(Path(settings.BASE_DIR).resolve()))
    except ValueError:
        return str(path)


def resolve_inside_root(raw: str, what: str) -> Path:
    """The absolute, symlink-free path for `raw`, or FelPathError if it leaves FEL_ROOT."""
    if not raw or not raw.strip():
        raise FelPathError(f"La ruta de {what} está vacía.")
    if "\x00" in raw:
        raise FelPathError(f"La ruta de {what} contiene un carácter nulo.")
    root = fel_root()
    given = Path(raw)
    base = given if given.is_absolute() else Path(settings.BASE_DIR) / given
    lexical = Path(os.path.normpath(base))
    if not lexical.is_relative_to(root):
        if ".." in given.parts:
            raise FelPathError(f"La ruta de {what} «{raw}» sale de FEL_ROOT ({root}) mediante «..».")
        raise FelPathError(
            f"La ruta de {what} «{raw}» está fuera de FEL_ROOT ({root}); "
            "las herramientas FEL solo leen y escriben dentro de esa carpeta."
        )
    resolved = lexical.resolve()
    if not resolved.is_relative_to(root):
        raise FelPathError(
            f"La ruta de {what} «{raw}» pasa por un enlace simbólico que apunta fuera de FEL_ROOT ({root})."
        )
    return resolved


def existing_file(raw: str, what: str) -> Path:
    path = resolve_inside_root(raw, what)
    if not path.exists():
        raise FelPathError(f"No existe el archivo de {what}: {raw}")
    if not path.is_file():
        raise FelPathError(f"La ruta de {what} «{raw}» no es un archivo.")
    if not os.access(path, os.R_OK):
        raise FelPathError(f"No hay permiso de lectura sobre el archivo de {what}: {raw}")
    return path


def existing_dir(raw: str, what: str) -> Path:
    path = resolve_inside_root(raw, what)
    if not path.is_dir():
        raise FelPathError(f"No existe la carpeta de {what}: {raw}")
    return path


def writable_dir(raw: str, what: str) -> Path:
    """The folder `raw` inside FEL_ROOT, created if missing, checked for write permission."""
    path = resolve_inside_root(raw, what)
    if path.exists() and not path.is_dir():
        raise FelPathError(f"La ruta de {what} «{raw}» existe y no es una carpeta.")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise FelPathError(f"No se puede crear la carpeta de {what} «{raw}»: {exc.strerror}.") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise FelPathError(f"No hay permiso de escritura en la carpeta de {what}: {raw}")
    return path


def writable_file(raw: str, what: str) -> Path:
    """The file `raw` inside FEL_ROOT, to be written; its folder is created if missing."""
    path = resolve_inside_root(raw, what)
    if path.is_dir():
        raise FelPathError(f"La ruta de {what} «{raw}» es una carpeta, no un archivo.")
    writable_dir(str(path.parent), what)
    if path.exists() and not os.access(path, os.W_OK):
        raise FelPathError(f"No hay permiso de escritura sobre el archivo de {what}: {raw}")
    return path
