"""Where FEL tools may read and write: only inside `settings.FEL_ROOT`.

A relative path is taken inside FEL_ROOT (`xml/factura.xml` is `FEL_ROOT/xml/factura.xml`),
wherever FEL_ROOT is (`/var/lib/homehub/fel` in a deployment). Seed 002 spells paths from the
project folder instead (`data/xml/factura.xml`, with the default FEL_ROOT `data/`): while
FEL_ROOT lies inside the project folder, a relative path that starts with FEL_ROOT's own name
there (`data/`) is read from the project folder, so both spellings work. Absolute paths are
accepted too. Whatever the spelling, the resolved path must lie inside FEL_ROOT. The three ways
out get their own message: `..`, an absolute path elsewhere, and a symlink whose target is
outside.
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


def _project() -> Path:
    return Path(settings.BASE_DIR).resolve()


def _base_for(given: Path, root: Path) -> Path:
    """The folder a relative path is read from: FEL_ROOT, or the project for seed 002's spelling."""
    project = _project()
    if root != project and root.is_relative_to(project):
        prefix = root.relative_to(project).parts
        if given.parts[: len(prefix)] == prefix:
            return project
    return root


def display_path(path: Path) -> str:
    """How results show a path, spelled so that a tool given it back finds the same file:
    from the project folder while FEL_ROOT is inside it (seed 002's `data/out/factura.pdf`),
    otherwise relative to FEL_ROOT (`out/factura.pdf`)."""
    root = fel_root()
    project = _project()
    base = project if root.is_relative_to(project) else root
    try:
        return str(path.relative_to(base))
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
    base = given if given.is_absolute() else _base_for(given, root) / given
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


def _looked_in(raw: str, path: Path) -> str:
    """For a relative path that is not there: where it was looked for (relative to FEL_ROOT)."""
    return "" if Path(raw).is_absolute() else f" (se buscó en {path})"


def existing_file(raw: str, what: str) -> Path:
    path = resolve_inside_root(raw, what)
    if not path.exists():
        raise FelPathError(f"No existe el archivo de {what}: {raw}{_looked_in(raw, path)}")
    if not path.is_file():
        raise FelPathError(f"La ruta de {what} «{raw}» no es un archivo.")
    if not os.access(path, os.R_OK):
        raise FelPathError(f"No hay permiso de lectura sobre el archivo de {what}: {raw}")
    return path


def existing_dir(raw: str, what: str) -> Path:
    path = resolve_inside_root(raw, what)
    if not path.is_dir():
        raise FelPathError(f"No existe la carpeta de {what}: {raw}{_looked_in(raw, path)}")
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
