"""m3ui.web.early_head on a real Starlette app served by uvicorn on 127.0.0.1: the snippet lands first in an HTML
page's <head> with a right Content-Length, streamed or not; anything else (JSON, compressed HTML, POST) passes
through byte for byte."""

from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from m3ui.web.early_head import EarlyHead
from tests.app_process import free_port

PAGE = "<!doctype html><html><head><title>t</title></head><body>x</body></html>"
SNIPPET = "<script>early()</script>"


@contextmanager
def client() -> Iterator[httpx.Client]:
    async def streamed() -> object:
        for part in ("<!doctype html><html><he", "ad><title>t</title></head>", "<body>x</body></html>"):
            yield part

    app = Starlette(routes=[
        Route("/", lambda request: HTMLResponse(PAGE), methods=["GET", "POST"]),
        Route("/streamed", lambda request: StreamingResponse(streamed(), media_type="text/html")),
        Route("/json", lambda request: JSONResponse({"head": "<head>"})),
        Route("/gzip", lambda request: Response(gzip.compress(PAGE.encode()), media_type="text/html",
                                                headers={"content-encoding": "gzip"})),
    ])
    app.add_middleware(EarlyHead, snippet=SNIPPET)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the test server did not start"
        time.sleep(0.02)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", trust_env=False) as http:
            yield http
    finally:
        server.should_exit = True
        thread.join(10)


def test_an_html_page_gets_the_snippet_first_in_its_head():
    with client() as http:
        for path in ("/", "/streamed"):
            response = http.get(path)
            assert response.text.startswith(f"<!doctype html><html><head>{SNIPPET}<title>t</title>")
            assert response.text.count(SNIPPET) == 1
            if "content-length" in response.headers:
                assert int(response.headers["content-length"]) == len(response.content)


def test_anything_else_passes_through_untouched():
    with client() as http:
        assert http.get("/json").json() == {"head": "<head>"}
        assert http.post("/").text == PAGE
        compressed = http.get("/gzip", headers={"accept-encoding": "identity"})
        assert compressed.text == PAGE  # the client inflated it: the body was not altered


def test_gradio_api_routes_get_the_servers_own_send_with_no_wrapper():
    """The queue's event streams (GET /gradio_api/queue/data, also under /admin) carry every streamed frame: an
    HTML check wrapped around their `send` would cost a call per message for nothing."""
    import asyncio

    seen = []

    async def app(scope, receive, send):
        seen.append(send)

    async def send(message):
        pass

    guard = EarlyHead(app, snippet=SNIPPET)
    for path in ("/gradio_api/queue/data", "/admin/gradio_api/queue/data"):
        asyncio.run(guard({"type": "http", "method": "GET", "path": path, "headers": []}, None, send))
    asyncio.run(guard({"type": "http", "method": "GET", "path": "/", "headers": []}, None, send))
    assert seen[0] is send and seen[1] is send and seen[2] is not send
