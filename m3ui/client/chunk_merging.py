"""A streamed answer's HTTP chunks reach h11 merged: one chunk per socket read instead of one per token.

An engine sends every token as an HTTP chunk of its own, and h11, the HTTP parser under httpx under the openai
SDK, decodes a chunked body in Python one chunk at a time: ~15 µs a chunk, and with httpcore's and httpx's layers
above it ~40 µs a token with 16 answers streaming, about half of the CPU an answer's thread spends
(bench_chat_stream, issue 11). Here httptools (llhttp in C, the parser uvicorn uses) decodes everything one read
brought, ~0.3 µs a chunk, and hands h11 the body bytes of that read re-framed as one chunk. The body's bytes are
unchanged; with paced reads (stream.py) one read carries the tokens of up to 0.1 s.

It hooks in through httpx's public extension points: a request event hook adds httpcore's `trace` extension, whose
"connection.connect_tcp.complete" event hands over a new connection's network stream before a byte of the
response is read, and its read() is wrapped. Only a plain-HTTP connection's first response, and only a 200 with a
chunked body, is re-framed; anything else passes through untouched, for h11 to judge. Framing httptools refuses
reaches h11 as framing it refuses too: the same RemoteProtocolError as without merging.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import httptools

_HEAD_END = b"\r\n\r\n"
_MAX_HEAD_BYTES = 64 * 1024  # h11 refuses a head this large anyway: past it, pass through and let it say so
_BAD_FRAMING = b"not a chunk size\r\n"  # h11: "illegal chunk header"
_TRACED_EVENT = "connection.connect_tcp.complete"


class NetworkStream(Protocol):
    """httpcore's synchronous network stream, as far as it is used here."""

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes: ...


Read = Callable[..., bytes]


class ChunkMerger:
    """The read() of one connection's network stream, re-framing the first response's chunked body."""

    def __init__(self, read: Read) -> None:
        self._read = read
        self._parser = httptools.HttpResponseParser(self)
        self._state = "head"  # "head", "body", then "through" for good
        self._head = b""
        self._chunked = False
        self._payload: list[bytes] = []
        self._complete = False

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        while True:
            data = self._read(max_bytes, timeout)
            if not data:  # the connection ended: h11 gets what it cut short, and says so
                held, self._head = self._head, b""
                return held
            if self._state == "through":
                return data
            merged = self._head_bytes(data) if self._state == "head" else self._body_bytes(data)
            if merged:
                return merged
            # only framing (a chunk size, a line end) or part of the head came: h11 has nothing to read yet

    # httptools' callbacks
    def on_header(self, name: bytes, value: bytes) -> None:
        if name.lower() == b"transfer-encoding" and b"chunked" in value.lower():
            self._chunked = True

    def on_body(self, body: bytes) -> None:
        self._payload.append(body)

    def on_message_complete(self) -> None:
        self._complete = True

    def _head_bytes(self, data: bytes) -> bytes:
        self._head += data
        end = self._head.find(_HEAD_END)
        if end < 0 and len(self._head) <= _MAX_HEAD_BYTES:
            return b""
        received, self._head = self._head, b""
        if end < 0:
            return self._pass_through(received)
        head, rest = received[: end + len(_HEAD_END)], received[end + len(_HEAD_END) :]
        try:
            self._parser.feed_data(head)
        except (httptools.HttpParserError, httptools.HttpParserUpgrade):  # not HTTP, or a protocol switch
            return self._pass_through(head + rest)
        if self._parser.get_status_code() != 200 or not self._chunked or self._complete:
            return self._pass_through(head + rest)
        self._state = "body"
        return head + (self._body_bytes(rest) if rest else b"")

    def _body_bytes(self, data: bytes) -> bytes:
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError:
            self._state = "through"
            return self._flush() + _BAD_FRAMING
        merged = self._flush()
        if self._complete:
            self._state = "through"
            merged += b"0\r\n\r\n"
        return merged

    def _flush(self) -> bytes:
        payload = b"".join(self._payload)
        self._payload.clear()
        return b"%x\r\n%s\r\n" % (len(payload), payload) if payload else b""

    def _pass_through(self, data: bytes) -> bytes:
        self._state = "through"
        return data


def _merge_chunks_of(event: str, info: dict[str, Any]) -> None:
    """httpcore's trace callback: wrap each new connection's reads."""
    stream = info.get("return_value") if event == _TRACED_EVENT else None
    if stream is not None and callable(getattr(stream, "read", None)):
        stream.read = ChunkMerger(stream.read).read


def merge_streamed_chunks(request: Any) -> None:
    """An httpx request event hook: plain-HTTP requests' responses are read with ChunkMerger. (Over TLS the
    connect event's stream carries encrypted bytes: those are left alone.)"""
    if request.url.scheme == "http" and "trace" not in request.extensions:
        request.extensions["trace"] = _merge_chunks_of
