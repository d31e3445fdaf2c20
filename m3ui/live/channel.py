"""GET /m3ui-live/{ticket}: a page's live channel, as server-sent events (assets/js/live.js reads it).

Each event's data is a frame_diff of the newest frame against the last one sent on this connection; a comment
line now and then keeps an idle channel open; an `end` event says the answer is over (the page closes the
channel: a browser would otherwise reconnect). The request passes the same guards as every other (Host, Origin)
and, when the app has logins, needs one; the ticket must be its session's (m3ui.live.holder).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable

from starlette.responses import PlainTextResponse, StreamingResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from m3ui.live.feed import END, LiveFeed, LiveFeeds, LiveRefused
from m3ui.live.frame_diff import LiveFrame, frame_diff
from m3ui.live.holder import LiveHolder

PATH = "/m3ui-live"
HEARTBEAT = b": alive\n\n"
ENDED = b"event: end\ndata: {}\n\n"


class LiveChannel:
    def __init__(self, feeds: LiveFeeds[LiveFrame], allowed: Callable[[Scope], bool],
                 holder: Callable[[Scope], LiveHolder]) -> None:
        self.feeds = feeds
        self.allowed = allowed  # whether the request is signed in where the app needs it
        self.holder = holder

    def route(self) -> Route:
        return Route(PATH + "/{ticket}", self, methods=["GET"])

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self.allowed(scope):
            await PlainTextResponse("sign in first\n", 401)(scope, receive, send)
            return
        ticket = scope["path_params"]["ticket"]
        try:
            feed, ready = self.feeds.subscribe(ticket, self.holder(scope))
        except LiveRefused as exc:
            await PlainTextResponse(f"no live channel: {exc}\n", exc.status)(scope, receive, send)
            return
        headers = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
        try:
            await StreamingResponse(_events(feed, ready), media_type="text/event-stream", headers=headers)(
                scope, receive, send)
        finally:  # the page went away (or reconnects): its answers go back to Gradio's frames meanwhile
            self.feeds.unsubscribe(ticket, feed)


async def _events(feed: LiveFeed[LiveFrame], ready: asyncio.Event) -> AsyncIterator[bytes]:
    yield HEARTBEAT  # sent at once: the page knows its channel is open
    sent: LiveFrame | None = None
    async for frame in feed.frames(ready):
        if frame is None:
            yield HEARTBEAT
            continue
        if frame is END:
            yield ENDED
            return
        diff = frame_diff(sent, frame)  # type: ignore[arg-type]  # a LiveFrame: END returned above
        sent = frame  # type: ignore[assignment]  # a LiveFrame: END returned above
        if diff is not None:
            yield b"data: " + json.dumps(diff, ensure_ascii=False, separators=(",", ":")).encode() + b"\n\n"
