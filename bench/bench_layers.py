"""What one change-feed message costs on Redis: the hub's layer (channels-redis's pub/sub
layer, as `homehub/settings.py` configures it with REDIS_URL) against channels-redis's core
layer, which the hub used before issue 29.

One process, one event loop, one listener: each turn is a `group_send` to a group and the
listener's `receive` of it, as a write's announcement and one process hearing it. Reported per
layer: the process's CPU time and the wall time per turn, median over interleaved rounds, and
the pub/sub layer's CPU against the core layer's as a ratio.

    .venv/bin/python bench/bench_layers.py                      # Redis at 127.0.0.1:6379/15
    .venv/bin/python bench/bench_layers.py --redis-url redis://127.0.0.1:6379/9 --count 5000
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from typing import Any

from channels_redis.core import RedisChannelLayer
from channels_redis.pubsub import RedisPubSubChannelLayer

GROUP = "bench.changes"


async def turns(layer: Any, count: int) -> tuple[float, float]:
    """(CPU µs, wall µs) per send-and-receive, after 100 unmeasured ones."""
    channel = await layer.new_channel()
    await layer.group_add(GROUP, channel)
    try:
        for i in range(100):
            await layer.group_send(GROUP, {"type": "home.event", "i": i})
            await layer.receive(channel)
        cpu, wall = time.process_time(), time.perf_counter()
        for i in range(count):
            await layer.group_send(GROUP, {"type": "home.event", "i": i, "event": {"kind": "light"}})
            await layer.receive(channel)
        return (time.process_time() - cpu) / count * 1e6, (time.perf_counter() - wall) / count * 1e6
    finally:
        await layer.group_discard(GROUP, channel)


async def main(url: str, count: int, rounds: int) -> None:
    layers = {
        "pub/sub (the hub's)": RedisPubSubChannelLayer(hosts=[url], prefix="bench."),
        "core (before)": RedisChannelLayer(hosts=[url], prefix="bench."),
    }
    figures: dict[str, list[tuple[float, float]]] = {name: [] for name in layers}
    for _ in range(rounds):
        for name, layer in layers.items():
            figures[name].append(await turns(layer, count))
    print(f"group_send + receive, one listener, {rounds} interleaved rounds of {count:,} ({url})")
    for name, runs in figures.items():
        cpu = statistics.median(c for c, _ in runs)
        wall = statistics.median(w for _, w in runs)
        print(f"  {name:<20} CPU {cpu:6.0f} µs   wall {wall:6.0f} µs per message")
    ratios = [core[0] / pubsub[0] for pubsub, core in zip(*figures.values(), strict=True)]
    print(f"  core CPU / pub/sub CPU: {statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f})")


if __name__ == "__main__":
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/15")
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    opts = parser.parse_args()
    asyncio.run(main(opts.redis_url, opts.count, opts.rounds))
