"""Which addresses count as loopback (the only ones served without authentication)."""

from __future__ import annotations

import ipaddress

__all__ = ["host_name", "is_loopback"]


def is_loopback(host: str | None) -> bool:
    """True for 127.0.0.0/8, ::1 (also IPv4-mapped) and ``localhost``; False for anything else,
    wildcard addresses included (names are not resolved)."""
    if not host:
        return False
    host = host.strip().strip("[]")
    if host.lower() == "localhost":
        return True
    try:
        ip = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback


def host_name(host_header: str) -> str:
    """The name of a ``Host`` header, without its port (``[::1]:8000`` -> ``::1``)."""
    host = host_header.strip()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host
