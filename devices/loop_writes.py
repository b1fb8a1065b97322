"""Home writes run on the event loop itself, on SQLite, when they need not wait.

An async write normally hops to Django's database thread and back: on this 2-core machine
the hand-over costs as much as the write (a few hundred µs). On SQLite a home write is a
handful of statements on one row plus its audit event (~0.2 ms), so the loop may run it
itself, on a connection of its own, provided it never waits there: the transaction begins
with `BEGIN IMMEDIATE` and a busy timeout of 0, so if anyone else holds the write lock
(another process, the database thread, a test's transaction) the write is handed to the
database thread as before, which waits as Django always does. Once the lock is held,
nothing in the transaction waits on others (WAL: readers never block the writer).

The same statements run either way (`devices.statements`), the audit event is written in
the write's transaction, and the broadcast goes out after the commit. The WAL is not
checkpointed by this connection (a checkpoint may take milliseconds): every
`CHECKPOINT_EVERY` writes, the database thread runs a passive checkpoint instead.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from asgiref.sync import sync_to_async
from django.db import connections, router

from devices.home_state import sqlite_path
from devices.models import Event

logger = logging.getLogger(__name__)

T = TypeVar("T")
UNAVAILABLE = object()


class Unsupported(Exception):
    """Raised by a change that must be done the ORM way (e.g. a row to create first)."""


CHECKPOINT_EVERY = 200

_lock = threading.Lock()
_conn: tuple[str, sqlite3.Connection] | None = None
_since_checkpoint = 0
_tasks: set[asyncio.Task] = set()


def _connection(path: str) -> sqlite3.Connection | None:
    global _conn
    if _conn is not None and _conn[0] == path:
        return _conn[1]
    if _conn is not None:
        _conn[1].close()
        _conn = None
    try:
        conn = sqlite3.connect(path, timeout=0, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA wal_autocheckpoint=0")
        if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
            conn.close()  # without WAL a writer would block readers: not here
            return None
    except sqlite3.Error:
        return None
    _conn = (path, conn)
    return conn


def try_write(change: Callable[..., T], *args: Any, **kwargs: Any) -> T | object:
    """Run `change(*args, **kwargs, raw=<sqlite3 cursor>)` in its own transaction on this thread,
    committed; UNAVAILABLE (nothing written) when that cannot be done without waiting.

    Exceptions other than database errors (a light that does not exist) roll back and
    propagate, as they would from the database thread."""
    path = sqlite_path(router.db_for_write(Event))
    if path is None or not _lock.acquire(blocking=False):
        return UNAVAILABLE
    try:
        conn = _connection(path)
        if conn is None:
            return UNAVAILABLE
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError:  # busy: someone else is writing
            return UNAVAILABLE
        try:
            result = change(*args, **kwargs, raw=conn.cursor())
            conn.execute("COMMIT")
        except (sqlite3.Error, Unsupported):
            conn.execute("ROLLBACK")
            logger.debug("loop write not done; handing it to the database thread", exc_info=True)
            return UNAVAILABLE
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        _count_write()
        return result
    finally:
        _lock.release()


def _count_write() -> None:
    global _since_checkpoint
    _since_checkpoint += 1
    if _since_checkpoint < CHECKPOINT_EVERY:
        return
    _since_checkpoint = 0
    try:
        task = asyncio.get_running_loop().create_task(_acheckpoint())
    except RuntimeError:
        return
    _tasks.add(task)
    task.add_done_callback(_tasks.discard)


def _checkpoint() -> None:
    with connections[router.db_for_write(Event)].cursor() as cursor:
        cursor.execute("PRAGMA wal_checkpoint(PASSIVE)")


async def _acheckpoint() -> None:
    try:
        await sync_to_async(_checkpoint)()
    except Exception:
        logger.exception("WAL checkpoint failed")
