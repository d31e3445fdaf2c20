"""Refuses requests a page on another site makes the browser send (CSRF, cross-site admin control).

Browsers put an Origin header on every cross-origin request and on every POST, so a request whose Origin is
neither this app itself nor a name the operator allowed did not come from this app's own pages. It is refused
before the app sees it; that also keeps Gradio's CORS layer from ever echoing a foreign origin with
credentials. Clients that send no Origin (curl, scripts) are not browsers driven by a foreign page.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

from m3ui.web.asgi import header, refuse
from m3ui.web.hosts import name_matches, split_host


def origin_allowed(origin: str, host: str | None, scheme: str, allowed_names: tuple[str, ...]) -> bool:
    """Same origin as the Host the request was sent to, or a name given with --allowed-host."""
    try:
        parts = urlsplit(origin)
    except ValueError:  # "http://[::1" and the like
        return False
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return False  # "null" (sandboxed frames, file: pages) and anything odd
    mine = split_host(parts.netloc, parts.scheme)
    if mine is None:
        return False
    if any(name_matches(mine[0], name) for name in allowed_names):
        return True
    return host is not None and mine == split_host(host, "https" if parts.scheme == "https" else scheme)


class OriginGuard:
    def __init__(self, app: ASGIApp, allowed_names: tuple[str, ...] = ()) -> None:
        self.app = app
        self.allowed_names = allowed_names

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            origin = header(scope, "origin")
            if origin is not None and not origin_allowed(origin, header(scope, "host"), scope.get("scheme", "http"),
                                                         self.allowed_names):
                await refuse(scope, receive, send, 403, f"cross-site request refused: Origin {origin[:100]} is "
                             "not this app (start m3ui with --allowed-host NAME to serve pages under another name)")
                return
        await self.app(scope, receive, send)
