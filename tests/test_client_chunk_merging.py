"""ChunkMerger: h11 reads a chunked response's body one chunk per socket read, with the very same bytes; anything
it should not touch passes unchanged, and broken framing is still refused. Unit tests feed h11 (the parser under
httpx) the merger's output for any split of the wire bytes; the hook is then checked on a real HTTP server."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import h11
import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from m3ui.client.chunk_merging import ChunkMerger, merge_streamed_chunks

CHUNKED_HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"


def chunked(*payloads: bytes, end: bytes = b"0\r\n\r\n") -> bytes:
    return b"".join(b"%X\r\n%s\r\n" % (len(p), p) for p in payloads) + end


def splits(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({0, len(data), *(c % (len(data) + 1) for c in cuts)})
    return [data[a:b] for a, b in zip(points, points[1:], strict=False)]


def h11_reading(reads: list[bytes], merged: bool) -> tuple[list[object], int]:
    """What h11 makes of a response that arrives in `reads` (then the connection ends): its events, and how many
    reads it asked for."""
    pending: Iterator[bytes] = iter(reads)
    asked = 0

    def raw_read(max_bytes: int, timeout: float | None = None) -> bytes:
        return next(pending, b"")

    read = ChunkMerger(raw_read).read if merged else raw_read
    connection = h11.Connection(h11.CLIENT)
    connection.send(h11.Request(method="POST", target="/v1/chat/completions", headers=[("Host", "engine")]))
    events: list[object] = []
    while True:
        event = connection.next_event()
        if event is h11.NEED_DATA:
            asked += 1
            connection.receive_data(read(65536))
            continue
        events.append(event)
        if isinstance(event, h11.EndOfMessage | h11.ConnectionClosed):
            return events, asked


def body_of(events: list[object]) -> bytes:
    return b"".join(e.data for e in events if isinstance(e, h11.Data))


payloads = st.lists(st.binary(min_size=1, max_size=300), min_size=1, max_size=30)


@given(payloads, st.lists(st.integers(min_value=0, max_value=20_000), max_size=12))
def test_any_split_of_a_chunked_body_reaches_h11_with_the_same_bytes(parts, cuts):
    wire = CHUNKED_HEAD + chunked(*parts)
    plain, _ = h11_reading(splits(wire, cuts), merged=False)
    merged, asked = h11_reading(splits(wire, cuts), merged=True)
    assert body_of(merged) == body_of(plain) == b"".join(parts)
    assert isinstance(merged[0], h11.Response) and merged[0].status_code == 200
    assert isinstance(merged[-1], h11.EndOfMessage)
    data_events = sum(isinstance(e, h11.Data) for e in merged)
    assert data_events <= asked  # one chunk per read at most, whatever the engine's chunks were


def test_a_read_of_many_tokens_is_one_chunk_for_h11():
    tokens = [b'data: {"choices": [{"delta": {"content": "w%d "}}]}\n\n' % i for i in range(50)]
    plain, _ = h11_reading([CHUNKED_HEAD, chunked(*tokens)], merged=False)
    merged, _ = h11_reading([CHUNKED_HEAD, chunked(*tokens)], merged=True)
    assert sum(isinstance(e, h11.Data) for e in plain) == 50
    assert sum(isinstance(e, h11.Data) for e in merged) == 1
    assert body_of(merged) == b"".join(tokens)


def test_chunk_extensions_and_trailers_are_read_as_framing():
    wire = CHUNKED_HEAD + b"5;name=value\r\nhello\r\n6\r\n world\r\n0\r\nExpires: never\r\n\r\n"
    merged, _ = h11_reading([wire], merged=True)
    assert body_of(merged) == b"hello world" and isinstance(merged[-1], h11.EndOfMessage)


@pytest.mark.parametrize("wire", [
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"a\": \"b\"}\n",
    b"HTTP/1.1 503 Service Unavailable\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked(b'{"error": "busy"}'),
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\ndata: x\n\n",
    b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n\x81\x05hello",
    b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked(b"late"),
    b"no HTTP at all, and no blank line either" * 2000,
], ids=["content-length", "not-200", "read-to-close", "protocol-switch", "interim-response", "not-http"])
def test_what_is_not_a_chunked_200_passes_through_byte_for_byte(wire):
    reads = splits(wire, [7, 40, 90])
    passed: list[bytes] = []
    pending = iter(reads)
    merger = ChunkMerger(lambda max_bytes, timeout=None: next(pending, b""))
    while chunk_read := merger.read(65536):
        passed.append(chunk_read)
    assert b"".join(passed) == wire


def test_broken_chunk_framing_is_still_refused_by_h11():
    wire = CHUNKED_HEAD + b"5\r\nhello\r\nzz\r\nmore\r\n0\r\n\r\n"
    with pytest.raises(h11.RemoteProtocolError):
        h11_reading([wire], merged=False)
    with pytest.raises(h11.RemoteProtocolError):
        h11_reading([wire], merged=True)


@pytest.mark.parametrize("wire", [b"HTTP/1.1 200 OK\r\nContent-Ty", CHUNKED_HEAD + b"A\r\nhello"],
                         ids=["in-the-head", "mid-chunk"])
def test_a_response_cut_off_is_refused_by_h11_just_as_without_merging(wire):
    refusals = []
    for merged in (False, True):
        with pytest.raises(h11.RemoteProtocolError) as refused:
            h11_reading(splits(wire, [9, 30]), merged=merged)
        refusals.append(str(refused.value))
    assert refusals[0] == refusals[1]


def raw_server(response: bytes) -> tuple[socket.socket, threading.Thread]:
    """A server on 127.0.0.1 that answers one request with `response`, written at once."""
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            request = b""
            while b"\r\n\r\n" not in request:
                request += conn.recv(65536)
            conn.sendall(response)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return listener, thread


@pytest.mark.parametrize("hooked", [False, True])
def test_the_request_hook_hands_httpx_a_body_in_reads_not_in_chunks(hooked):
    tokens = [b"data: %d\n\n" % i for i in range(40)]
    listener, thread = raw_server(CHUNKED_HEAD + chunked(*tokens))
    hooks = {"request": [merge_streamed_chunks]} if hooked else {}
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1/chat/completions"
    with listener, httpx.Client(event_hooks=hooks) as client, client.stream("POST", url) as response:
        pieces = list(response.iter_raw())
    thread.join(5)
    assert b"".join(pieces) == b"".join(tokens)
    assert len(pieces) == (1 if hooked else 40)
