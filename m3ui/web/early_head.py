"""Puts a few scripts at the top of every HTML page's <head>, where they run before the page is first painted.

Gradio runs the `head=` scripts it is given only after it has mounted, drawn a bare page and fetched its styles;
a script that must act before the first paint (the remembered dark theme: otherwise every load of a dark page
flashes white first) has to be in the HTML itself.
"""

from __future__ import annotations

from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from m3ui.web.mounts import API_PREFIX

HEAD = b"<head>"
API_PATH = API_PREFIX + "/"  # Gradio's API routes, of either mount: never a page, and the queue's event streams


class EarlyHead:
    def __init__(self, app: ASGIApp, snippet: str) -> None:
        self.app = app
        self.snippet = snippet.encode("utf-8")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "GET" or not self.snippet or API_PATH in scope["path"]:
            await self.app(scope, receive, send)  # untouched: an event stream's messages pass no wrapper of ours
            return
        start: Message | None = None
        chunks: list[bytes] = []

        async def send_page(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start" and _plain_html(Headers(raw=message["headers"])):
                start = message  # held until the whole page is here (a Gradio page is one small body)
                return
            if start is None or message["type"] != "http.response.body":
                await send(message)
                return
            chunks.append(message.get("body", b""))
            if message.get("more_body", False):
                return
            page = b"".join(chunks).replace(HEAD, HEAD + self.snippet, 1)
            headers = MutableHeaders(raw=list(start["headers"]))
            headers["content-length"] = str(len(page))
            await send({**start, "headers": headers.raw})
            await send({"type": "http.response.body", "body": page})

        await self.app(scope, receive, send_page)


def _plain_html(headers: Headers) -> bool:
    """An uncompressed HTML page (anything else passes through untouched)."""
    return headers.get("content-type", "").startswith("text/html") and "content-encoding" not in headers
