"""The URL printed at startup: one a browser on this machine can open for the address the app listens on."""

from __future__ import annotations

from m3ui.web.hosts import host_name

# A wildcard listen address is not an address to browse to; its loopback of the same family is.
BROWSE_INSTEAD = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}


def browse_url(listen_host: str, port: int) -> str:
    return f"http://{host_name(BROWSE_INSTEAD.get(listen_host, listen_host))}:{port}/"
