"""Running a coroutine from sync code (a Django view, a command): the engine's one way.

Without a serving loop (`loop` None) the coroutine runs through asgiref's `async_to_sync`: under
a server, on the event loop that serves the request (database work inside it comes back to the
request's thread); elsewhere, on a loop of its own. With the loop that serves something this
thread must not outlive (the device gateway's), the coroutine runs on that loop and the thread
waits only while the loop runs: a server stopping (SIGTERM) never leaves it waiting for ever,
which would keep the process from exiting; it raises `stopping()` instead.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from asgiref.sync import async_to_sync

T = TypeVar("T")

STOP_CHECK_SECONDS = 0.25  # how often a waiting thread checks that the serving loop still runs


def run_from_sync(
    make: Callable[[], Coroutine[Any, Any, T]],
    *,
    loop: asyncio.AbstractEventLoop | None = None,
    stopping: Callable[[], BaseException] | None = None,
) -> T:
    """The result of the coroutine `make()`, from sync code; see the module's docstring."""
    if loop is None or loop.is_closed():
        return async_to_sync(make)()
    # Started in a context of its own: this thread's (a request's) would have the coroutine's
    # database work run in this very thread (asgiref's ThreadSensitiveContext), which waits for it.
    future = contextvars.Context().run(asyncio.run_coroutine_threadsafe, make(), loop)
    while True:
        try:
            return future.result(timeout=STOP_CHECK_SECONDS)
        except concurrent.futures.CancelledError:  # the server's shutdown ended the call
            raise _stopped(stopping) from None
        except concurrent.futures.TimeoutError:
            if not loop.is_running():
                future.cancel()
                raise _stopped(stopping) from None


def _stopped(stopping: Callable[[], BaseException] | None) -> BaseException:
    return stopping() if stopping is not None else RuntimeError("the serving event loop stopped")
