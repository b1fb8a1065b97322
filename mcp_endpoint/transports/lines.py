"""Newline-delimited messages on a byte stream (stdin), with a size limit per line."""

from __future__ import annotations

import asyncio
import os
import selectors
import stat
from collections.abc import AsyncIterator
from typing import BinaryIO

CHUNK = 1 << 16


class LineTooLong(Exception):
    """A line exceeded the limit; it has been skipped up to its end."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"message larger than {limit} bytes")
        self.limit = limit


def _watchable(stream: BinaryIO) -> bool:
    """Pipes, sockets and terminals can be watched by the event loop; files cannot, nor the
    character devices the loop's selector refuses (`< /dev/null`: epoll says EPERM, and the
    loop would only log it, never reading the end of input)."""
    try:
        fd = stream.fileno()
        mode = os.fstat(fd).st_mode
    except (OSError, ValueError):  # no file descriptor (an in-memory stream)
        return False
    if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)):
        return False
    with selectors.DefaultSelector() as probe:
        try:
            probe.register(fd, selectors.EVENT_READ)
        except OSError:
            return False
    return True


async def _chunks(stream: BinaryIO) -> AsyncIterator[bytes]:
    loop = asyncio.get_running_loop()
    if not _watchable(stream):
        # Regular files (`< file`) cannot be watched by the event loop: read in a thread.
        while chunk := await loop.run_in_executor(None, stream.read, CHUNK):
            yield chunk
        return
    reader = asyncio.StreamReader(limit=CHUNK)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stream)
    while chunk := await reader.read(CHUNK):
        yield chunk


async def read_lines(stream: BinaryIO, max_bytes: int) -> AsyncIterator[bytes | LineTooLong]:
    """Yield each line (without its newline), or a LineTooLong in place of an oversized one.

    An oversized line never sits in memory whole: its bytes are dropped as they arrive.
    """
    buffer = bytearray()
    skipping = False
    async for chunk in _chunks(stream):
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            if end < 0:
                if not skipping:
                    buffer += chunk[start:]
                    if len(buffer) > max_bytes:
                        buffer.clear()
                        skipping = True
                break
            if skipping:
                skipping = False
                yield LineTooLong(max_bytes)
            else:
                buffer += chunk[start:end]
                if len(buffer) > max_bytes:
                    yield LineTooLong(max_bytes)
                elif buffer.strip():
                    yield bytes(buffer)
                buffer.clear()
            start = end + 1
    if skipping:
        yield LineTooLong(max_bytes)
    elif buffer.strip():
        yield bytes(buffer)


class LineWriter:
    """Writes one message per line and flushes, so the peer sees it at once."""

    def __init__(self, stream: BinaryIO) -> None:
        self.stream = stream

    def write(self, text: str) -> None:
        self.stream.write(text.encode() + b"\n")
        self.stream.flush()
