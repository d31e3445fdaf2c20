"""Marks every cookie `Secure` when the request came over https, so that a browser never sends it over plain http.

The session cookies (m3ui.web.login_route) and the admin token cookie (m3ui.web.admin_token) are set without
Secure (a login over plain http must work); behind https they would still go out over any plain http request to
the same name. One pass over every answer's cookies, so that none is forgotten. The scheme is the request's own,
or, from a --trusted-proxy only, its X-Forwarded-Proto (uvicorn sets it into the scope).
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

SET_COOKIE = b"set-cookie"


def secured(cookie: bytes) -> bytes:
    attributes = {part.strip().split(b"=", 1)[0].lower() for part in cookie.split(b";")[1:]}
    return cookie if b"secure" in attributes else cookie + b"; Secure"


class SecureCookies:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("scheme") != "https":
            await self.app(scope, receive, send)
            return

        async def send_secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [(k, secured(v) if k.lower() == SET_COOKIE else v)
                                                  for k, v in message.get("headers", [])]}
            await send(message)

        await self.app(scope, receive, send_secured)
