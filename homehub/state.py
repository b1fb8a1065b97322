"""Files the hub keeps outside the database, in its state folder: the copy of the first admin's
password (`homehub.admin_login`), the secret key generated when DJANGO_SECRET_KEY is unset, and
this installation's id (its default MQTT client id).

Plain functions over a list of folders (settings.HOMEHUB_STATE_DIRS), with no Django import:
the settings module itself reads the secret key through them. Files are written mode 600 from
the start (never readable by others, not even for an instant) and appear whole or not at all.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

SECRET_KEY_FILE = ".homehub-secret-key"
INSTALLATION_ID_FILE = ".homehub-installation-id"


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


def kept_value(folders: Iterable[Path], name: str, make: Callable[[], str]) -> tuple[str, Path] | None:
    """The value kept in file `name` of the first of `folders` that has one; else `make()`,
    kept in the first that takes it (several processes starting at once all end up with the one
    written first). None when no folder takes it."""
    folders = [Path(folder) for folder in folders]
    for folder in folders:
        path = folder / name
        if path.is_file():
            return path.read_text().strip(), path
    for folder in folders:
        try:
            path = write_private(folder, name, make() + "\n", replace=False)
        except FileExistsError:
            path = folder / name
        except OSError:
            continue
        return path.read_text().strip(), path
    return None


def kept_secret_key(folders: Iterable[Path]) -> tuple[str, Path] | None:
    """The secret key kept in the state folders (made once), or None when none takes it."""
    return kept_value(folders, SECRET_KEY_FILE, lambda: secrets.token_urlsafe(50))


def installation_id(folders: Iterable[Path], where: str) -> str:
    """This installation's id: eight hex digits drawn once and kept in its state folder, so that
    two hubs (two checkouts on one machine, two machines) never share one; when no folder takes
    it, a digest of `where` (the host and the project folder), stable across restarts."""
    try:
        kept = kept_value(folders, INSTALLATION_ID_FILE, lambda: secrets.token_hex(4))
    except OSError:  # there, but another user's (mode 600): this process is not that hub's
        kept = None
    return kept[0] if kept else hashlib.sha256(where.encode()).hexdigest()[:8]
