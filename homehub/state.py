"""Files the hub keeps outside the database, in its state folder: the copy of the first admin's
password (`homehub.admin_login`) and the secret key generated when DJANGO_SECRET_KEY is unset.

Plain functions over a list of folders (settings.HOMEHUB_STATE_DIRS), with no Django import:
the settings module itself reads the secret key through them. Files are written mode 600 from
the start (never readable by others, not even for an instant) and appear whole or not at all.
"""

from __future__ import annotations

import os
import secrets
import tempfile
from collections.abc import Iterable
from pathlib import Path

SECRET_KEY_FILE = ".homehub-secret-key"


def write_private(folder: Path, name: str, text: str, *, replace: bool = True) -> Path:
    """Write `text` to `folder/name`, mode 600. `replace=False`: FileExistsError when the file
    is already there (another process came first), which is then left as it is."""
    fd, tmp = tempfile.mkstemp(prefix=f"{name}-", dir=folder)
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        if replace:
            os.replace(tmp, folder / name)
        else:
            os.link(tmp, folder / name)  # atomic, and refuses to overwrite
    finally:
        Path(tmp).unlink(missing_ok=True)
    return folder / name


def kept_secret_key(folders: Iterable[Path]) -> tuple[str, Path] | None:
    """The secret key kept in the first of `folders` that has one; else a new one, kept in the
    first that takes it (several processes starting at once all end up with the one written
    first). None when no folder takes it."""
    folders = [Path(folder) for folder in folders]
    for folder in folders:
        path = folder / SECRET_KEY_FILE
        if path.is_file():
            return path.read_text().strip(), path
    for folder in folders:
        try:
            path = write_private(folder, SECRET_KEY_FILE, secrets.token_urlsafe(50) + "\n", replace=False)
        except FileExistsError:
            path = folder / SECRET_KEY_FILE
        except OSError:
            continue
        return path.read_text().strip(), path
    return None
