"""Refuses every request whose Host header is not a name the app answers to (m3ui.web.hosts), with a message
that says how to serve it, so that a page on a rebound DNS name cannot reach the app as same-origin."""

from __future__ import annotations

import logging

from starlette.types import ASGIApp, Receive, Scope, Send

from m3ui.web.asgi import client_address, header, refuse
from m3ui.web.hosts import name_matches, split_host

LOG = logging.getLogger("m3ui.web")
LOGGED_NAMES = 100  # each refused name is logged once, up to this many (a flood does not fill the log)


class HostGuard:
    def __init__(self, app: ASGIApp, allowed: list[str]) -> None:
        self.app = app
        self.allowed = allowed
        self._logged: set[str] = set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        given = header(scope, "host") or ""
        parsed = split_host(given)
        if parsed is not None and any(name_matches(parsed[0], name) for name in self.allowed):
            await self.app(scope, receive, send)
            return
        name = parsed[0] if parsed else given[:100]
        if name not in self._logged and len(self._logged) < LOGGED_NAMES:
            self._logged.add(name)
            LOG.warning("refused requests for Host %r (first from %s): not a name this app answers to; "
                        "--allowed-host adds one", name, client_address(scope))
        await refuse(scope, receive, send, 400, f"Host {name!r} is not served here (DNS rebinding protection): "
                     f"start m3ui with --allowed-host {name or 'NAME'} to serve it under this name")
