"""An engine that misbehaves on purpose, as a real process on 127.0.0.1 (`python -m tests.misbehaving_engine
PORT`): the request's `model` names the fault. It answers /health and /v1/models like an engine, and
/faults/hangups counts the clients that hung up on a stream it was still sending (a client that gives up must
disconnect, so that a real engine stops generating)."""

from __future__ import annotations

import json
import select
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.sse_replay import DONE, chunk

STALL_MAX_S = 30.0  # a stalled stream is held this long at most (the client should give up well before)
ENDLESS_MAX_CHUNKS = 200_000
FAULTS = ("stall", "no_choices", "non_utf8", "html", "json", "endless")


class Counters:
    def __init__(self) -> None:
        self.hangups = 0
        self.lock = threading.Lock()

    def hung_up(self) -> None:
        with self.lock:
            self.hangups += 1


def handler_for(counters: Counters) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:  # noqa: N802
            bodies = {"/health": {}, "/v1/models": {"object": "list", "data": [{"id": f} for f in FAULTS]},
                      "/faults/hangups": {"hangups": counters.hangups}}
            if self.path not in bodies:
                self._send(404, "application/json", b'{"message": "not found"}')
                return
            self._send(200, "application/json", json.dumps(bodies[self.path]).encode())

        def do_POST(self) -> None:  # noqa: N802
            request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            fault = request.get("model")
            try:
                if fault == "html":
                    self._send(200, "text/html", b"<html><body><h1>502 Bad Gateway</h1></body></html>")
                elif fault == "json":
                    body = {"object": "chat.completion", "choices": [{"message": {"content": "whole"}}]}
                    self._send(200, "application/json", json.dumps(body).encode())
                else:
                    self._stream(fault)
            except OSError:  # BrokenPipe / ConnectionReset: the client hung up mid-stream
                counters.hung_up()

        def _send(self, status: int, content_type: str, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _stream(self, fault: object) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self._event(chunk(content="", role="assistant").encode())
            self._event(chunk(content="Part of an answer").encode())
            if fault == "stall":
                readable, _, _ = select.select([self.connection], [], [], STALL_MAX_S)
                if readable and self.connection.recv(1, socket.MSG_PEEK) == b"":
                    counters.hung_up()
                return
            if fault == "endless":
                for _ in range(ENDLESS_MAX_CHUNKS):
                    self._event(chunk(content="more ").encode())
            elif fault == "no_choices":
                self._event(b'data: {"id": "x", "object": "chat.completion.chunk"}\n\n')
            elif fault == "non_utf8":
                self._event(b'data: {"choices": [{"index": 0, "delta": {"content": "\xff\xfe"}}]}\n\n')
            self._event(DONE.encode())
            self.wfile.write(b"0\r\n\r\n")

        def _event(self, data: bytes) -> None:
            self.wfile.write(b"%X\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

    return Handler


def main(port: int) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", port), handler_for(Counters()))
    server.daemon_threads = True
    print(f"misbehaving engine on http://127.0.0.1:{port}", flush=True)
    server.serve_forever(poll_interval=0.05)


if __name__ == "__main__":
    main(int(sys.argv[1]))
