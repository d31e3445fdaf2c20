"""The per-start token of the passwordless loopback admin (as Jupyter does it).

Without an admin password the admin app is served on loopback only, but any page in the operator's browser
can still send requests to 127.0.0.1. The token printed in the startup URL proves the request comes from
someone who read the app's output: the first visit trades it for a cookie, later requests carry the cookie.
"""

from __future__ import annotations

import hmac
import logging
from urllib.parse import parse_qsl, urlencode

from starlette.requests import cookie_parser
from starlette.types import ASGIApp, Receive, Scope, Send

from m3ui.web.asgi import client_address, header, refuse

QUERY_KEY = "token"
AUDIT = logging.getLogger("m3ui.audit")


def cookie_name(scope: Scope) -> str:
    """One cookie per port: browsers share cookies across the ports of one host, apps on them do not."""
    server = scope.get("server")
    return f"m3ui-admin-token-{server[1] if server else 0}"


def _same(given: str, token: str) -> bool:
    return hmac.compare_digest(given.encode(), token.encode())


class AdminTokenGuard:
    def __init__(self, app: ASGIApp, token: str, prefix: str) -> None:
        self.app = app
        self.token = token
        self.prefix = prefix

    def _guarded(self, path: str) -> bool:
        return path == self.prefix or path.startswith(self.prefix + "/")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or not self._guarded(scope["path"]):
            await self.app(scope, receive, send)
            return
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        given = dict(query).get(QUERY_KEY)
        if given is not None and _same(given, self.token) and scope["type"] == "http":
            await self._trade_for_cookie(scope, receive, send, [(k, v) for k, v in query if k != QUERY_KEY])
            return
        cookie = cookie_parser(header(scope, "cookie") or "").get(cookie_name(scope))
        if cookie is not None and _same(cookie, self.token):
            await self.app(scope, receive, send)
            return
        await refuse(scope, receive, send, 403, "admin refused: open the admin URL printed when m3ui started "
                     "(it carries this run's token), or start m3ui with an admin password")

    async def _trade_for_cookie(self, scope: Scope, receive: Receive, send: Send,
                                rest: list[tuple[str, str]]) -> None:
        """Set the cookie and send the browser to the same URL without the token (kept out of history)."""
        AUDIT.info("audit: admin token accepted from %s; cookie set", client_address(scope))
        location = scope.get("root_path", "") + scope["path"] + (f"?{urlencode(rest)}" if rest else "")
        cookie = (f"{cookie_name(scope)}={self.token}; Path={self.prefix}; HttpOnly; SameSite=Strict")
        await send({"type": "http.response.start", "status": 303,
                    "headers": [(b"location", location.encode()), (b"set-cookie", cookie.encode()),
                                (b"cache-control", b"no-store"), (b"content-length", b"0")]})
        await send({"type": "http.response.body", "body": b""})
