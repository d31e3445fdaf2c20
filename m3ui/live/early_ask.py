"""POST /m3ui-live/{ticket}/ask: a page says, at the click on Send, what it is about to ask (assets/js/live.js).

The answer itself is asked for through Gradio as always; this only lets the server send the engine request that
answer will make before Gradio's page script and queue deliver it (m3ui.client.early_request). The body is the
question and the form's settings as JSON; the reply says whether a request went out (the page ignores it). The
request passes the same guards as every other (Host, Origin: a foreign page cannot make one) and, when the app has
logins, needs one; the ticket names the page, must be the asking session's (m3ui.live.holder), and the request
is only ever handed to that page's own answer.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anyio
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from m3ui.live.channel import PATH
from m3ui.live.feed import TICKET, LiveFeeds, LiveRefused
from m3ui.live.holder import LiveHolder
from m3ui.web.asgi import BodyTooLarge, read_body
from m3ui.web.json_body import TooDeep, load_json

MAX_BODY = 1024 * 1024  # a longer question is asked the usual way only
# (page ticket, the form as the page sent it, the signed-in person) -> whether the request went out
StartEarly = Callable[[str, dict[str, object], str | None], bool]


class EarlyAsk:
    def __init__(self, start: StartEarly, allowed: Callable[[Scope], bool], user: Callable[[Scope], str | None],
                 feeds: LiveFeeds[Any], holder: Callable[[Scope], LiveHolder]) -> None:
        self.start, self.allowed, self.user = start, allowed, user
        self.feeds, self.holder = feeds, holder

    def route(self) -> Route:
        return Route(PATH + "/{ticket}/ask", self, methods=["POST"])

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self.allowed(scope):
            await PlainTextResponse("sign in first\n", 401)(scope, receive, send)
            return
        ticket = scope["path_params"]["ticket"]
        if not TICKET.fullmatch(ticket):
            await PlainTextResponse("malformed ticket\n", 400)(scope, receive, send)
            return
        try:
            self.feeds.bind(ticket, self.holder(scope))
        except LiveRefused as exc:
            await PlainTextResponse(f"{exc}\n", exc.status)(scope, receive, send)
            return
        try:
            form = load_json(await read_body(receive, MAX_BODY))
        except BodyTooLarge:
            await PlainTextResponse("too long to ask early: it is asked the usual way\n", 413)(scope, receive, send)
            return
        except TooDeep as exc:
            await PlainTextResponse(f"{exc}\n", 400)(scope, receive, send)
            return
        except (json.JSONDecodeError, UnicodeDecodeError):
            form = None
        if not isinstance(form, dict):
            await PlainTextResponse("the body must be a JSON object\n", 400)(scope, receive, send)
            return
        sent = await anyio.to_thread.run_sync(self.start, ticket, form, self.user(scope))
        await JSONResponse({"sent": sent})(scope, receive, send)
