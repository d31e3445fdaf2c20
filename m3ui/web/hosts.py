"""The names the app answers to: a request for any other Host is refused (DNS rebinding protection).

A page on evil.example can make the browser resolve evil.example to 127.0.0.1 and then reach this app as
same-origin; only the Host header still says evil.example. So the app serves only the names it listens as.
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

import psutil

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}
WILDCARD_HOSTS = ("0.0.0.0", "::", "")


def host_name(name: str) -> str:
    """As the Host header spells it: lower case, an IPv6 literal in brackets."""
    bare = name.strip().strip("[]").lower()
    try:
        if ipaddress.ip_address(bare.split("%", 1)[0]).version == 6:
            return f"[{bare}]"
    except ValueError:
        pass
    return bare


def split_host(netloc: str, scheme: str = "http") -> tuple[str, int | None] | None:
    """(name as host_name spells it, port) of a Host header or URL authority; None when it does not parse."""
    if any(c in netloc for c in "@/?#\\ "):  # userinfo, paths...: no browser sends a Host like that
        return None
    try:
        parts = urlsplit(f"//{netloc}")
        return (host_name(parts.hostname), parts.port or DEFAULT_PORTS.get(scheme)) if parts.hostname else None
    except ValueError:
        return None


def name_matches(name: str, allowed: str) -> bool:
    """`allowed` is a name or a `*.example.org` wildcard (as --allowed-host takes them)."""
    pattern = host_name(allowed)
    return name == pattern or (pattern.startswith("*.") and name.endswith(pattern[1:]))


def local_addresses() -> list[str]:
    """Every address of this machine's interfaces (what a wildcard listen address answers on)."""
    families = (socket.AF_INET, socket.AF_INET6)
    return [a.address.split("%", 1)[0] for addrs in psutil.net_if_addrs().values() for a in addrs
            if a.family in families]


def allowed_hosts(listen_host: str, extra: tuple[str, ...] = ()) -> list[str]:
    """Loopback names, the listen address (all local addresses and the host name for 0.0.0.0 or ::), and the
    names the operator adds with --allowed-host (`*.example.com` allowed)."""
    names = [*LOOPBACK_NAMES, *extra]
    if listen_host in WILDCARD_HOSTS:
        names += [*local_addresses(), socket.gethostname()]
    else:
        names.append(listen_host)
    return list(dict.fromkeys(host_name(n) for n in names if n.strip()))


def check_allowed_host(name: str) -> str | None:
    """Why an --allowed-host value is unusable, or None."""
    if not name.strip() or any(c in name for c in "/:?#@ ") and not _is_ipv6(name):
        return "give a host name or address without scheme, port or path, e.g. m3ui.example.org"
    if "*" in name[1:] or (name.startswith("*") and not name.startswith("*.")):
        return "a wildcard must be like *.example.org"
    return None


def _is_ipv6(name: str) -> bool:
    try:
        return ipaddress.ip_address(name.strip("[]")).version == 6
    except ValueError:
        return False
