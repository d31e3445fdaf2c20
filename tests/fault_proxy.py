"""A network fault injector for the monitor tests: an HTTP proxy on 127.0.0.1 in front of a real engine (the
simulated one). It forwards every request, records which paths were asked for (and what was sent), and can delay
the answers of chosen paths or answer them itself (a worker whose answers stop parsing; "*": every path not
named). Closing it is an engine that went away; a new one on the same port is the engine coming back.
"""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx

_HOP_HEADERS = {"connection", "keep-alive", "transfer-encoding", "content-length", "host", "content-encoding"}


class FaultProxy:
    def __init__(self, upstream: str, port: int = 0) -> None:
        self.upstream = upstream.rstrip("/")
        self.delay_s: dict[str, float] = {}  # path -> seconds to wait before forwarding
        self.answers: dict[str, tuple[int, bytes]] = {}  # path (or "*") -> the status and HTML body sent instead
        self.hits: list[tuple[str, str]] = []  # (method, path), in order
        self.bodies: list[tuple[str, bytes]] = []  # (path, request body) of each request forwarded, in order
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._client = httpx.Client(base_url=self.upstream, timeout=60, trust_env=False)
        self._server = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> FaultProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop listening: connections to the port are refused from now on, and requests in flight get no answer."""
        self._closed.set()
        self._server.shutdown()
        self._server.server_close()
        self._client.close()

    def paths(self) -> list[str]:
        with self._lock:
            return [path for _, path in self.hits]

    def _forward(self, handler: BaseHTTPRequestHandler) -> None:
        path = handler.path.split("?")[0]
        with self._lock:
            self.hits.append((handler.command, path))
        time.sleep(self.delay_s.get(path, 0.0))
        answer_instead = self.answers.get(path, self.answers.get("*"))
        if answer_instead is not None:
            self._answer(handler, *answer_instead)
            return
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else b""
        with self._lock:
            self.bodies.append((path, body))
        headers = {k: v for k, v in handler.headers.items() if k.lower() not in _HOP_HEADERS}
        if self._closed.is_set():
            return  # the connection closes unanswered, as with an engine that went away
        try:
            answer = self._client.request(handler.command, handler.path, headers=headers, content=body)
        except RuntimeError:
            return  # closed meanwhile
        except httpx.HTTPError:
            handler.send_error(502, "upstream unreachable")
            return
        try:
            handler.send_response(answer.status_code)
            for key, value in answer.headers.items():
                if key.lower() not in _HOP_HEADERS:
                    handler.send_header(key, value)
            handler.send_header("Content-Length", str(len(answer.content)))
            handler.end_headers()
            handler.wfile.write(answer.content)
        except OSError:
            pass  # the client gave up waiting (its timeout): nothing to answer

    @staticmethod
    def _answer(handler: BaseHTTPRequestHandler, status: int, body: bytes) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", "text/html")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):  # HTTP/1.0: one request per connection, none outlives close()
            def do_GET(self) -> None:  # noqa: N802
                proxy._forward(self)

            do_POST = do_GET  # noqa: N815

            def log_message(self, *args: object) -> None:
                pass

        return Handler
