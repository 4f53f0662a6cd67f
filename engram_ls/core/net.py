"""Addresses the servers bind to (``engram-mcp --http``, ``engram-ls --tcp``)."""

from __future__ import annotations

import ipaddress

WILDCARDS = ("", "0.0.0.0", "::", "[::]")


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` keeps a server reachable from this machine only: ``localhost``
    and the loopback addresses (``127.0.0.0/8``, ``::1``, with or without brackets). Any other
    name or address, and the wildcards (``0.0.0.0``, ``::``), reach beyond it."""
    name = host.strip().lower()
    if name == "localhost":
        return True
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False
