"""Where the gateway sits among the app's HTTP layers: inside the Host guard, in place of the Origin guard for
/v1/..., outside everything that serves the pages (logins, sessions, Gradio's routing), so a forwarded chunk passes
no layer that has nothing to say about it.

CORS is off: a request whose Origin is neither this app nor an --allowed-host name is refused, as the Origin
guard refuses it elsewhere, unless it is the one origin `--gateway-cors ORIGIN` allows; that origin gets CORS
headers and its preflight (OPTIONS) is answered here.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from m3ui.gateway.api_errors import send_error
from m3ui.gateway.gateway import Gateway
from m3ui.web.asgi import header
from m3ui.web.origin_guard import origin_allowed

PREFIX = "/v1"
CORS_HEADERS = b"authorization, x-api-key, content-type, anthropic-version, anthropic-beta"
PREFLIGHT_MAX_AGE = b"600"


class GatewayLayer:
    def __init__(self, app: ASGIApp, gateway: Gateway, allowed_names: tuple[str, ...] = (),
                 cors_origin: str | None = None) -> None:
        self.app, self.gateway = app, gateway
        self.allowed_names, self.cors_origin = allowed_names, cors_origin

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or not (path == PREFIX or path.startswith(PREFIX + "/")):
            await self.app(scope, receive, send)
            return
        origin = header(scope, "origin")
        if origin is None or origin_allowed(origin, header(scope, "host"), scope.get("scheme", "http"),
                                            self.allowed_names):
            await self.gateway(scope, receive, send)
        elif origin == self.cors_origin:
            await self._cross_origin(scope, receive, send, origin)
        else:
            await send_error(send, path, 403, f"cross-site request refused: Origin {origin[:100]} is not this app "
                             "(start m3ui with --gateway-cors ORIGIN to let one site's pages call the API)")

    async def _cross_origin(self, scope: Scope, receive: Receive, send: Send, origin: str) -> None:
        allow = [(b"access-control-allow-origin", origin.encode()), (b"vary", b"Origin")]
        if scope["method"] == "OPTIONS":
            await send({"type": "http.response.start", "status": 204, "headers": [
                *allow, (b"access-control-allow-methods", b"GET, POST, OPTIONS"),
                (b"access-control-allow-headers", CORS_HEADERS), (b"access-control-max-age", PREFLIGHT_MAX_AGE)]})
            await send({"type": "http.response.body", "body": b""})
            return

        async def with_cors(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *allow]}
            await send(message)

        await self.gateway(scope, receive, with_cors)
