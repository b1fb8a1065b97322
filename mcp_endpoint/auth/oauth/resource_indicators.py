"""Which resource (RFC 8707) a token is for. The hub's one protected resource is its `/mcp`,
named by the URL its protected-resource metadata gives (the hub's base URL and `/mcp`)."""

from __future__ import annotations

from urllib.parse import urlsplit

MCP_PATH = "/mcp"


def hub_resource(base_url: str) -> str:
    """The `/mcp` resource of the hub reached at `base_url` (scheme and host)."""
    return base_url.rstrip("/") + MCP_PATH


def same_resource(named: str, resource: str) -> bool:
    """`named` is `resource`: the same host (case-insensitive), port and path (a trailing slash
    aside). The scheme is not compared: behind a proxy that ends TLS the hub may see http for
    a URL its clients know as https."""
    a, b = urlsplit(named.strip()), urlsplit(resource)
    return (
        a.netloc.lower() == b.netloc.lower()
        and a.path.rstrip("/") == b.path.rstrip("/")
        and not a.query
        and not a.fragment
    )
