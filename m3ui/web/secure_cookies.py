"""Marks every cookie `Secure` when the request came over https, so that a browser never sends it over plain http.

Gradio's login sets two cookies with the same session token: `access-token-…` (Secure, for https) and
`access-token-unsecure-…` (no Secure, so that a login over plain http works), and the admin token cookie
(m3ui.web.admin_token) has no Secure either. Behind https the second copy would still go out over any plain http
request to the same name. The scheme is the request's own, or, from a --trusted-proxy only, its
X-Forwarded-Proto (uvicorn sets it into the scope).
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
