"""The home's state (lights, alarm, presence) kept in process for MCP reads, so that a read
on the event loop needs no hop to Django's database thread.

The copy is trusted only while the database proves nothing changed since it was read. On
SQLite the process keeps one read-only connection that asks `PRAGMA data_version` (about
5 µs, no database lock): its value changes whenever *any other* connection commits, this
process's Django connection as much as another process's (a second daphne, `mcp_stdio`,
the MQTT worker). Whatever changed, even an audit row, the next read goes to the database.

Other databases (PostgreSQL) have no such cheap question, and a broadcast from another
process can arrive after a client that saw its write has already asked this process, so
there every read goes to the database, as before.

The copy is only filled from reads made outside any transaction, so it never holds rows
that a transaction could still roll back (tests run inside one).
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

from asgiref.sync import sync_to_async
from django.db import connections, router

from devices.models import Light

_watch: tuple[str, sqlite3.Connection] | None = None
_watch_lock = threading.Lock()


class _Snapshot:
    __slots__ = ("alarm", "lights", "present", "version")

    def __init__(self, version: int, state: dict[str, Any]) -> None:
        self.version = version
        self.lights: tuple[tuple[str, bool], ...] = tuple(state["lights"].items())
        self.alarm: bool = state["alarm"]
        self.present: tuple[str, ...] = tuple(state["presence"]["known_people"])


_snapshot: _Snapshot | None = None


def sqlite_path(alias: str) -> str | None:
    """The database file when `alias` is a file-backed SQLite database, else None."""
    db = connections.settings[alias]
    name = str(db.get("NAME") or "")
    if "sqlite3" not in db.get("ENGINE", "") or not name or name == ":memory:" or "mode=memory" in name:
        return None
    return name


def data_version() -> int | None:
    """SQLite's data version as the process's watch connection sees it; None when the
    database cannot say (not SQLite, or the file cannot be opened).

    One connection for the whole process, behind a lock: versions read by two different
    connections cannot be compared, and any thread (event loops come and go) may ask.
    """
    global _watch
    path = sqlite_path(router.db_for_read(Light))
    if path is None:
        return None
    with _watch_lock:
        if _watch is None or _watch[0] != path:
            if _watch is not None:
                _watch[1].close()
                _watch = None
            try:
                uri = Path(path).resolve().as_uri() + "?mode=ro"
                conn = sqlite3.connect(uri, uri=True, timeout=1, check_same_thread=False)
            except sqlite3.Error:
                return None
            _watch = (path, conn)
        try:
            return _watch[1].execute("PRAGMA data_version").fetchone()[0]
        except sqlite3.Error:
            return None


def _read() -> tuple[dict[str, Any], bool]:
    """Read the state through Django (its thread); also say whether it may be kept."""
    from devices.selectors import get_all_states

    state = get_all_states()
    return state, not connections[router.db_for_read(Light)].in_atomic_block


_aread = sync_to_async(_read)


async def snapshot() -> _Snapshot | dict[str, Any]:
    """The current state: the kept copy when still valid, else read afresh (and kept when
    that is safe). Returns a `_Snapshot` or, when nothing may be kept, the state itself."""
    global _snapshot
    version = data_version()
    kept = _snapshot
    if version is not None and kept is not None and kept.version == version:
        return kept
    # The version is taken before the read: a commit in between makes the copy look older
    # than it is, so it is read again next time, never trusted past a change.
    state, keepable = await _aread()
    if version is None or not keepable:
        return state
    _snapshot = _Snapshot(version, state)
    return _snapshot


def forget() -> None:
    """Drop the kept copy (tests, and anyone who changed the home behind the ORM's back)."""
    global _snapshot
    _snapshot = None


async def all_states() -> dict[str, Any]:
    found = await snapshot()
    if isinstance(found, dict):
        return found
    return {
        "lights": dict(found.lights),
        "alarm": found.alarm,
        "presence": {"present": bool(found.present), "known_people": list(found.present)},
    }


async def alarm_status() -> dict[str, bool]:
    found = await snapshot()
    return {"armed": found["alarm"] if isinstance(found, dict) else found.alarm}


async def presence() -> dict[str, Any]:
    found = await snapshot()
    if isinstance(found, dict):
        return found["presence"]
    return {"present": bool(found.present), "known_people": list(found.present)}


async def lights_on() -> dict[str, list[str]]:
    found = await snapshot()
    lights = found["lights"].items() if isinstance(found, dict) else found.lights
    return {"on": [name for name, on in lights if on]}
