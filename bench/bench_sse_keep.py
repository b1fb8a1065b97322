"""What keeping one event of a resumable GET stream costs (`mcp_endpoint.transports.sse_store`).

One `SseStream` of kind "get" (as `/mcp` opens for a session's GET) sends `--count`
notifications to a send that discards them; every event is kept in the cache the settings
pick (`REDIS_URL`: Redis, else the in-process LocMemCache). Reported: the wall time per
event over the first 10 events and over the last 100 (by then MCP_SSE_KEEP_EVENTS are
kept) with the process's CPU time per event over those, and the time to load the record
as a resuming GET does.

    .venv/bin/python bench/bench_sse_keep.py
    REDIS_URL=redis://127.0.0.1:6379/14 .venv/bin/python bench/bench_sse_keep.py
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


async def run(count: int) -> tuple[list[float], float, float]:
    from mcp_endpoint.transports import sse_store
    from mcp_endpoint.transports.http import SseStream

    async def discard(message: dict) -> None:
        pass

    session = secrets.token_hex(8)
    stream = SseStream(discard, [], session_id=session, record=sse_store.StreamRecord("get"))
    await stream.open()
    took = []
    cpu = 0.0
    for n in range(count):
        if n == count - 100:
            cpu = time.process_time()
        message = {
            "jsonrpc": "2.0",
            "method": "notifications/resources/updated",
            "params": {"uri": f"home://{n}"},
        }
        start = time.perf_counter()
        await stream.event(message)
        took.append(time.perf_counter() - start)
    cpu = (time.process_time() - cpu) / 100
    start = time.perf_counter()
    await sse_store.load(session, stream.stream_id)
    return took, cpu, time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--count", type=int, default=1000)
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "homehub.settings")
    os.environ.setdefault("HOMEHUB_LOG_LEVEL", "WARNING")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.conf import settings

    took, cpu, load = asyncio.run(run(args.count))
    print(
        f"cache: {settings.CACHES['default']['BACKEND']}, MCP_SSE_KEEP_EVENTS={settings.MCP_SSE_KEEP_EVENTS}"
    )
    print(f"first 10 events: {statistics.median(took[:10]) * 1e6:.0f} µs/event (median)")
    print(
        f"last 100 events: {statistics.median(took[-100:]) * 1e6:.0f} µs/event (median),"
        f" {cpu * 1e6:.0f} µs of CPU/event"
    )
    print(f"load for a resume: {load * 1e6:.0f} µs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
