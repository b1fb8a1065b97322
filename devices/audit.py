"""Audit of MCP tool calls made with an access token (HTTP, WebSocket, gateway calls).

Every such call gets a `tool.call` event, reads included. Writing each one as it happens
cost a hop to the database thread and a commit per call, more than a read itself, so the
rows are kept in memory and written together, in one transaction, `FLUSH_SECONDS` after
the first of them (or at once when `FLUSH_ROWS` wait), each with the moment of its call.
What is still waiting when the process ends is written on the way out (`atexit`), so a
clean stop (SIGTERM, SIGINT, end of input) loses nothing; a process killed outright loses
at most the last `FLUSH_SECONDS`.

On SQLite the batch is written on the event loop itself when the write lock is free at
once (`devices.loop_writes`), like the home's writes: a flush in Django's database thread
held the lock while the loop's writes found it taken and went to that thread too.

This is the call log only. A change to the home is audited by the service that makes it,
in the same transaction as the change (`devices.services`), never through this buffer.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import threading
from collections.abc import Callable
from typing import Any

from asgiref.sync import sync_to_async
from django.db import transaction
from django.utils import timezone

from devices import loop_writes, statements
from devices.storable import bounded_json, storable_text
from mcp_endpoint.registry import Caller, ToolResult

logger = logging.getLogger(__name__)

MAX_ARGUMENTS_CHARS = 2000
FLUSH_SECONDS = 0.2
FLUSH_ROWS = 500


class AuditBuffer:
    """Rows waiting to be written; any thread may add, whoever flushes writes them all."""

    def __init__(self) -> None:
        self._rows: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._scheduled: set[asyncio.AbstractEventLoop] = set()
        self._tasks: set[asyncio.Task] = set()

    def __len__(self) -> int:
        return len(self._rows)

    def add(self, row: dict[str, Any]) -> None:
        """Keep `row`; from an event loop, a flush follows within FLUSH_SECONDS."""
        with self._lock:
            self._rows.append(row)
            waiting = len(self._rows)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # no loop (sync callers): the next flush or the exit writes it
        if waiting >= FLUSH_ROWS:
            self._start_flush(loop)
        elif loop not in self._scheduled:
            self._scheduled.add(loop)
            loop.call_later(FLUSH_SECONDS, self._flush_later, loop)

    def _flush_later(self, loop: asyncio.AbstractEventLoop) -> None:
        self._scheduled.discard(loop)
        self._start_flush(loop)

    def _start_flush(self, loop: asyncio.AbstractEventLoop) -> None:
        task = loop.create_task(self._aflush())
        self._tasks.add(task)  # a task nobody holds may be collected before it runs
        task.add_done_callback(self._tasks.discard)

    async def _aflush(self) -> None:
        try:
            if not self._flush_on_loop():
                await sync_to_async(self.flush)()
        except Exception:  # kept for the next flush; a broken database must not break calls
            logger.exception("could not write %d audit rows; will retry", len(self))

    def _flush_on_loop(self) -> bool:
        """Write the waiting rows through `loop_writes`; False when that must wait (nothing
        written, the rows still waiting)."""
        return self._write_waiting(lambda rows: loop_writes.try_write(statements.insert_events, rows)) >= 0

    def _write_waiting(self, write: Callable[[list[dict[str, Any]]], Any]) -> int:
        """`write(rows)` for the waiting rows; how many (-1 when `write` answered UNAVAILABLE).
        Rows it did not write (it raised, or must wait) go back to wait for the next flush."""
        with self._lock:
            rows, self._rows = self._rows, []
        if not rows:
            return 0
        try:
            done = write(rows)
        except BaseException:
            self._put_back(rows)
            raise
        if done is loop_writes.UNAVAILABLE:
            self._put_back(rows)
            return -1
        return len(rows)

    def _put_back(self, rows: list[dict[str, Any]]) -> None:
        """Rows that could not be written go back to the front, before any added since."""
        with self._lock:
            self._rows[:0] = rows

    def discard(self) -> None:
        """Drop the waiting rows (tests: rows of a rolled-back test must not land in the next)."""
        with self._lock:
            self._rows.clear()

    def flush(self) -> int:
        """Write every waiting row in one transaction (Django's sync thread); how many."""
        return self._write_waiting(_insert_in_transaction)


def _insert_in_transaction(rows: list[dict[str, Any]]) -> None:
    with transaction.atomic():
        statements.insert_events(rows)


buffer = AuditBuffer()


def flush() -> int:
    """Write the waiting audit rows now (tests, shutdown)."""
    return buffer.flush()


@atexit.register
def _flush_at_exit() -> None:
    if len(buffer):
        try:
            buffer.flush()
        except Exception:
            logger.exception("audit rows lost at exit: %d", len(buffer))


async def audit_tool_call(
    caller: Caller, tool: str, arguments: Any, result: ToolResult, seconds: float
) -> None:
    outcome: dict[str, Any] = {"ok": not result.is_error, "ms": round(seconds * 1000, 1)}
    if result.is_error:
        outcome["error"] = storable_text((result.text or "")[:500])
    buffer.add(
        statements.event_row(
            at=timezone.now(),
            actor=caller.actor,
            interface=caller.interface,
            action="tool.call",
            target=f"tool:{tool}",
            before=bounded_json(arguments, MAX_ARGUMENTS_CHARS),
            after=outcome,
        )
    )
