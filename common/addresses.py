"""Who is asking, by network address, for the limits that count per address: one IPv4
address, or one IPv6 /64 (a home or a host gets a whole /64, and could otherwise count as
many askers as it has addresses)."""

from __future__ import annotations

import ipaddress

IPV6_PREFIX = 64


def address_key(remote_address: str) -> str:
    """The address a limit counts `remote_address` (REMOTE_ADDR: behind the deployment's proxy,
    the client's, through daphne's --proxy-headers) as."""
    try:
        address = ipaddress.ip_address(remote_address.strip())
    except ValueError:
        return remote_address.strip()[:64] or "unknown"
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.ip_network(f"{address}/{IPV6_PREFIX}", strict=False))
    return str(address)
