"""A real HTTP server on 127.0.0.1 that replays scripted chat-completion replies (recorded SSE or JSON errors).

It records every request body and notices when a client hangs up mid-stream, so tests can check what the
client sent and that stop() really disconnects. Chunk builders produce sglang-kt's exact chunk shape.
"""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

SAMPLES_PATH = Path(__file__).parent / "data" / "sglang_stream_samples.json"
DONE = "data: [DONE]\n\n"


@dataclass(frozen=True)
class SseReply:
    events: tuple[str, ...]
    delay_s: float = 0.0
    hold_open_s: float = 0.0  # after the events, keep the response open (until the client hangs up)
    cut_off: bool = False  # after the events, drop the connection mid-body, like a crashed engine
    at_once: bool = False  # all the events in one write, as a busy engine's tokens pile up between two reads


@dataclass(frozen=True)
class JsonReply:
    status: int
    body: dict[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class RawReply:
    """Any body with any content type, sent as one chunk: for engines that misbehave."""

    body: bytes
    content_type: str = "text/event-stream"
    status: int = 200


Reply = SseReply | JsonReply | RawReply


def load_samples() -> dict[str, tuple[str, ...]]:
    return {name: tuple(events) for name, events in json.loads(SAMPLES_PATH.read_text()).items()}


def chunk(
    content: str | None = None,
    reasoning: str | None = None,
    tool_calls: list[dict[str, object]] | None = None,
    finish_reason: str | None = None,
    role: str | None = None,
) -> str:
    """One `data:` event in sglang-kt's shape: every delta key present, null when unused."""
    delta = {"role": role, "content": content, "reasoning_content": reasoning, "tool_calls": tool_calls}
    choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason, "matched_stop": None}
    body = {"id": "0f1e2d3c4b5a", "object": "chat.completion.chunk", "created": 1795977585, "model": "MiniMax-M3",
            "choices": [choice], "usage": None}
    return f"data: {json.dumps(body)}\n\n"


def usage_chunk(prompt_tokens: int, completion_tokens: int) -> str:
    usage = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
             "total_tokens": prompt_tokens + completion_tokens, "prompt_tokens_details": None, "reasoning_tokens": 0}
    body = {"id": "0f1e2d3c4b5a", "object": "chat.completion.chunk", "created": 1795977585, "model": "MiniMax-M3",
            "choices": [], "usage": usage}
    return f"data: {json.dumps(body)}\n\n"


def answer_reply(text: str, reasoning: str | None = None, **reply_options: float) -> SseReply:
    """A whole streamed answer, split into a few deltas, with finish and usage chunks."""
    events = [chunk(content="", role="assistant")]
    if reasoning:
        events.append(chunk(reasoning=reasoning))
    events += [chunk(content=text[i : i + 4]) for i in range(0, len(text), 4)]
    events += [chunk(finish_reason="stop"), usage_chunk(10, len(events)), DONE]
    return SseReply(tuple(events), **reply_options)


def tool_calls_reply(*calls: tuple[str, str], call_id_prefix: str = "call_") -> SseReply:
    """Streamed tool calls: (name, raw argument text) each; arguments arrive in two fragments."""
    events = [chunk(content="", role="assistant")]
    for index, (name, arguments) in enumerate(calls):
        call_id = f"{call_id_prefix}{index:024x}"
        first = {"id": call_id, "index": index, "type": "function", "function": {"name": name, "arguments": ""}}
        events.append(chunk(tool_calls=[first]))
        half = len(arguments) // 2
        for fragment in (arguments[:half], arguments[half:]):
            part = {"id": None, "index": index, "type": "function", "function": {"name": None, "arguments": fragment}}
            events.append(chunk(tool_calls=[part]))
    events += [chunk(finish_reason="tool_calls"), usage_chunk(20, 10), DONE]
    return SseReply(tuple(events))


class ReplayServer:
    """Replays `replies` in order, one per POST; records request bodies. Use as a context manager."""

    def __init__(self, replies: Iterable[Reply]) -> None:
        self.replies = list(replies)
        self.requests: list[dict[str, object]] = []
        self.aborts: list[dict[str, object]] = []  # POST /abort_request bodies (answered 404: no sglang route here)
        self.headers: list[dict[str, str]] = []
        self.client_disconnected = threading.Event()
        self._lock = threading.Lock()
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._http.daemon_threads = True
        self._thread = threading.Thread(target=self._http.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._http.server_address[1]}/v1"

    def __enter__(self) -> ReplayServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._http.shutdown()
        self._http.server_close()
        self._thread.join(timeout=5)

    def _record(self, body: dict[str, object], headers: dict[str, str]) -> Reply:
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)
            if not self.replies:
                return JsonReply(500, {"object": "error", "message": "replay server: no scripted reply left"})
            return self.replies.pop(0)


def _handler_for(server: ReplayServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:  # keep test output quiet
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            if self.path == "/abort_request":  # an OpenAI-compatible server that is not sglang has no such route
                server.aborts.append(body)
                self._send_json(JsonReply(404, {"detail": "Not Found"}))
                return
            reply = server._record(body, dict(self.headers))
            try:
                if isinstance(reply, JsonReply):
                    self._send_json(reply)
                elif isinstance(reply, RawReply):
                    self._send_raw(reply)
                else:
                    self._send_sse(reply)
            except (BrokenPipeError, ConnectionResetError):
                server.client_disconnected.set()

        def _send_json(self, reply: JsonReply) -> None:
            data = json.dumps(reply.body).encode()
            self.send_response(reply.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _send_raw(self, reply: RawReply) -> None:
            self.send_response(reply.status)
            self.send_header("Content-Type", reply.content_type)
            self.send_header("Content-Length", str(len(reply.body)))
            self.end_headers()
            self.wfile.write(reply.body)

        def _send_sse(self, reply: SseReply) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            framed = [b"%X\r\n%s\r\n" % (len(data), data) for data in (event.encode() for event in reply.events)]
            for data in [b"".join(framed)] if reply.at_once else framed:
                self.wfile.write(data)
                self.wfile.flush()
                time.sleep(reply.delay_s)
            if reply.hold_open_s and self._wait_for_hangup(reply.hold_open_s):
                server.client_disconnected.set()
                return
            if reply.cut_off:
                self.close_connection = True
                return
            self.wfile.write(b"0\r\n\r\n")

        def _wait_for_hangup(self, timeout_s: float) -> bool:
            """While a response is in flight the client sends nothing: readable + empty read = it hung up."""
            readable, _, _ = select.select([self.connection], [], [], timeout_s)
            return bool(readable) and self.connection.recv(1, socket.MSG_PEEK) == b""

    return Handler
