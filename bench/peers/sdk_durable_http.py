"""The benchmarks' HTTP write peer: `sdk_durable_home`'s server (writes committed to
`PEER_DATABASE_URL` first) as the SDK's Streamable HTTP app, exactly as `sdk_home_http`
serves the in-memory one:

    cd bench/peers && PEER_DATABASE_URL=... ../../.venv/bin/daphne -b 127.0.0.1 -p 8765 sdk_durable_http:app
"""

from __future__ import annotations

from sdk_durable_home import durable_server
from sdk_home_http import LazySessionManager

app = LazySessionManager(durable_server("mcp-http"))
