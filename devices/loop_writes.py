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
`CHECKPOINT_EVERY` writes, the database thread runs one that starts the WAL over; the
loop's writes wait for it to end (it holds the write lock), so the file stays bounded.

Writes that arrive together share a commit (`write`): when other tasks are ready to run,
the first write lets the loop run them (one turn), and every write queued on that loop
meanwhile goes into the same transaction, each inside its own savepoint, so that one that
fails leaves the others untouched. The commit costs as much as the statements (SQLite
writes each changed page to the WAL once per commit), so sixteen sessions writing at once
pay it once, not sixteen times. A write with nothing else ready (one client at a time)
commits at once, without the turn; so does one on a loop where the last few turns found
nobody to join (a lone client under a server whose loop always has something ready),
except one write in `PROBE_EVERY`, which looks again. Nobody's write is answered before
the commit that holds it.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
import weakref
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
_checkpointing: asyncio.Future | None = None  # while a checkpoint runs; done when it ends
_tasks: set[asyncio.Task] = set()
# Per event loop: how many gathered commits in a row held a single write, and past how many
# writes stop gathering (see `_alone`).
_lonely: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, int] = weakref.WeakKeyDictionary()
LONELY_AFTER = 4
PROBE_EVERY = 8
# Per event loop: the writes waiting for the next group commit (change, args, kwargs, future).
_queued: dict[asyncio.AbstractEventLoop, list[tuple[Callable[..., Any], tuple, dict, asyncio.Future]]] = {}


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


def _begin() -> sqlite3.Connection | None:
    """The loop connection in a new `BEGIN IMMEDIATE` transaction, with `_lock` held; None
    (nothing held) when the database is not a WAL SQLite file or the lock would wait."""
    path = sqlite_path(router.db_for_write(Event))
    if path is None or not _lock.acquire(blocking=False):
        return None
    try:
        conn = _connection(path)
        if conn is not None:
            conn.execute("BEGIN IMMEDIATE")
            return conn
    except sqlite3.OperationalError:  # busy: someone else is writing
        pass
    _lock.release()
    return None


def try_write(change: Callable[..., T], *args: Any, **kwargs: Any) -> T | object:
    """Run `change(*args, **kwargs, raw=<sqlite3 cursor>)` in its own transaction on this thread,
    committed; UNAVAILABLE (nothing written) when that cannot be done without waiting.

    Exceptions other than database errors (a light that does not exist) roll back and
    propagate, as they would from the database thread."""
    [(ok, value)] = _run_together([(change, args, kwargs)])
    if not ok:
        raise value
    return value


async def write(change: Callable[..., T], *args: Any, **kwargs: Any) -> T | object:
    """`try_write`, sharing the commit with the writes queued on this loop in the same turn.

    Returns once the transaction holding the change has committed; UNAVAILABLE (nothing of
    this change written) when it could not be done without waiting."""
    if sqlite_path(router.db_for_write(Event)) is None:  # PostgreSQL: the database thread
        return UNAVAILABLE
    loop = asyncio.get_running_loop()
    checkpoint = _checkpointing
    if checkpoint is not None and checkpoint.get_loop() is loop:
        # It holds the write lock for a few milliseconds: wait here rather than in the
        # database thread, then the writes that waited share one commit.
        await asyncio.shield(checkpoint)
    queue = _queued.get(loop)
    if queue is None and (not _others_ready(loop) or _alone(loop)):  # no turn to wait
        return try_write(change, *args, **kwargs)
    future: asyncio.Future = loop.create_future()
    if queue is not None:  # a commit is being gathered: join it
        queue.append((change, args, kwargs, future))
        return await future
    _queued[loop] = queue = [(change, args, kwargs, future)]
    try:
        await asyncio.sleep(0)  # one turn: the tasks ready now may queue their writes
    finally:  # cancelled or not, the writes that joined are waiting for this commit
        del _queued[loop]
        _commit_together(queue)
        _lonely[loop] = _lonely.get(loop, 0) + 1 if len(queue) == 1 else 0
    return future.result()


def _alone(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether the last LONELY_AFTER gathered commits of this loop each held one write; then
    the turn is skipped, but for one write in PROBE_EVERY, which gathers to look again."""
    lonely = _lonely.get(loop, 0)
    if lonely < LONELY_AFTER:
        return False
    _lonely[loop] = lonely + 1
    return (lonely - LONELY_AFTER + 1) % PROBE_EVERY != 0


def _others_ready(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether other callbacks (tasks) wait to run in this loop's next turn, i.e. whether a
    write may join. CPython's loops keep them in `_ready`; for a loop without it, assume so."""
    ready = getattr(loop, "_ready", None)
    return ready is None or len(ready) > 0


def _commit_together(writes: list[tuple[Callable[..., Any], tuple, dict, asyncio.Future]]) -> None:
    """`_run_together` for the queued `writes`, then settle their futures: the change's
    result, its exception, or UNAVAILABLE for those not written."""
    try:
        outcomes = _run_together([(change, args, kwargs) for change, args, kwargs, _future in writes])
    except BaseException:
        for *_, future in writes:
            if not future.done():
                future.set_result(UNAVAILABLE)
        raise
    for (*_, future), (ok, value) in zip(writes, outcomes, strict=True):
        if not future.done():  # done: its task was cancelled
            if ok:
                future.set_result(value)
            else:
                future.set_exception(value)


def _run_together(changes: list[tuple[Callable[..., Any], tuple, dict]]) -> list[tuple[bool, Any]]:
    """Run `changes` in one transaction, a savepoint each when there are several (so that
    one failing leaves the others); per change (True, its result or UNAVAILABLE when not
    written) or (False, its exception). Nothing is written when the transaction cannot
    begin without waiting or fails as a whole; what is not an Exception propagates."""
    outcomes: list[tuple[bool, Any]] = [(True, UNAVAILABLE)] * len(changes)
    conn = _begin()
    if conn is None:
        return outcomes
    several = len(changes) > 1
    try:
        cursor = conn.cursor()
        for i, (change, args, kwargs) in enumerate(changes):
            if several:
                conn.execute("SAVEPOINT loop_write")
            try:
                outcomes[i] = (True, change(*args, **kwargs, raw=cursor))
            except Exception as exc:
                if not several:
                    raise
                conn.execute("ROLLBACK TO loop_write")
                if isinstance(exc, sqlite3.Error | Unsupported):
                    logger.debug("loop write not done; handing it to the database thread", exc_info=True)
                else:
                    outcomes[i] = (False, exc)
            if several:
                conn.execute("RELEASE loop_write")
        conn.execute("COMMIT")
    except (sqlite3.Error, Unsupported):  # nothing committed: every change is still to do
        _rollback(conn)
        logger.debug("loop writes not done; handing them to the database thread", exc_info=True)
        return [(True, UNAVAILABLE)] * len(changes)
    except Exception as exc:  # the one change's own error (a light that does not exist)
        _rollback(conn)
        return [(False, exc)]
    except BaseException:
        _rollback(conn)
        raise
    finally:
        _lock.release()
    for ok, value in outcomes:
        if ok and value is not UNAVAILABLE:
            _count_write()
    return outcomes


def _rollback(conn: sqlite3.Connection) -> None:
    if conn.in_transaction:
        conn.execute("ROLLBACK")


def _count_write() -> None:
    global _since_checkpoint, _checkpointing
    _since_checkpoint += 1
    running = _checkpointing is not None and not _checkpointing.get_loop().is_closed()
    if _since_checkpoint < CHECKPOINT_EVERY or running:
        return
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return
    _checkpointing = loop.create_future()
    task = loop.create_task(_acheckpoint())
    _tasks.add(task)
    task.add_done_callback(_checkpoint_ended)  # also when cancelled before it started


def _checkpoint() -> None:
    # RESTART: the next writer starts the WAL file over. A PASSIVE checkpoint, with the loop
    # writing meanwhile, left a frame written after it in the WAL every time, so the file
    # was never started over: it grew by every write (670 MB in ten seconds of writes).
    with connections[router.db_for_write(Event)].cursor() as cursor:
        cursor.execute("PRAGMA wal_checkpoint(RESTART)")


async def _acheckpoint() -> None:
    try:
        await sync_to_async(_checkpoint)()
    except Exception:
        logger.exception("WAL checkpoint failed")


def _checkpoint_ended(task: asyncio.Task) -> None:
    """Failed or not, the loop writes again, and checkpoints again CHECKPOINT_EVERY later."""
    global _since_checkpoint, _checkpointing
    _tasks.discard(task)
    done, _since_checkpoint, _checkpointing = _checkpointing, 0, None
    if done is not None and not done.done():
        done.set_result(None)
