"""A misbehaving engine (a real HTTP server on 127.0.0.1 sending what no OpenAI-compatible engine sends) ends
the stream with one clear StreamError, never a Python error: chunks without choices or with wrong types,
non-UTF-8 bytes, web pages and JSON documents instead of a stream, a stall, an engine ignoring max_tokens."""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from m3ui.client import ChatClient, ContentDelta, EndpointConfig, Finished, GenerationSettings, StreamError
from m3ui.client.output_cap import CAP_MARGIN_TOKENS
from tests.sse_replay import DONE, RawReply, ReplayServer, SseReply, chunk

HELLO = [{"role": "user", "content": "hello"}]
DEFAULTS = GenerationSettings()


def run(replies, settings=DEFAULTS):
    with ReplayServer(replies) as server:
        client = ChatClient(EndpointConfig(base_url=server.base_url))
        events = list(client.stream(HELLO, settings))
        client.close()
    return events, server


def final_error(replies, settings=DEFAULTS) -> StreamError:
    events, _ = run(replies, settings)
    assert isinstance(events[-1], StreamError), events[-1]
    return events[-1]


def test_a_chunk_without_choices_is_reported_as_unreadable_with_what_it_sent():
    bad = 'data: {"id": "x", "object": "chat.completion.chunk", "oops": 1}\n\n'
    error = final_error([SseReply((chunk(content="Hi"), bad, DONE))])
    assert error.kind == "protocol"
    assert "cannot read (it has no `choices` list)" in error.message and '"oops": 1' in error.message


def test_a_content_that_is_not_text_is_reported_not_passed_on():
    error = final_error([SseReply((chunk(content="Hi"), chunk().replace('"content": null', '"content": 5'), DONE))])
    assert error.kind == "protocol" and "its `content` is a int, not a str" in error.message


def test_non_utf8_bytes_get_a_plain_message_not_a_codec_error():
    body = chunk(content="Hi").encode() + b'data: {"choices": [{"delta": {"content": "\xff\xfe"}}]}\n\n'
    error = final_error([RawReply(body)])
    assert error.kind == "protocol" and "not UTF-8 text" in error.message and "codec" not in error.message


def test_a_web_page_instead_of_a_stream_says_the_address_may_be_wrong():
    events, server = run([RawReply(b"<html><body><h1>Welcome to nginx!</h1></body></html>", "text/html")])
    [error] = events
    assert error.kind == "protocol" and "a web page, not a chat stream" in error.message
    assert server.base_url in error.message and "Welcome to nginx!" in error.message


def test_a_web_page_that_stalls_is_given_up_at_the_stall_limit():
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        endpoint = EndpointConfig(base_url=f"http://127.0.0.1:{listener.getsockname()[1]}/v1")

        def headers_only() -> None:
            connection, _ = listener.accept()
            connection.recv(65536)
            connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 1000\r\n\r\n")
            time.sleep(5)
            connection.close()

        threading.Thread(target=headers_only, daemon=True).start()
        [error] = list(ChatClient(endpoint).stream(HELLO, GenerationSettings(stall_seconds=1)))
    assert error.kind == "stall"


def test_a_json_document_instead_of_a_stream_is_named_as_such():
    body = json.dumps({"object": "chat.completion", "choices": [{"message": {"content": "Hi"}}]}).encode()
    [error] = run([RawReply(body, "application/json")])[0]
    assert error.kind == "protocol" and "one JSON document, not a chat stream" in error.message


@pytest.mark.parametrize(("body", "content_type", "shown"), [
    (b"Hello, I am not an engine.\n\n", "text/event-stream", "(it sent: Hello, I am not an engine.)"),
    (b"<html><body>Bad Gateway</body></html>", "text/event-stream", "(it sent: <html><body>Bad Gateway</body></html>)"),
    (b"data: \x00\n\n", "text/event-stream", "(it sent: \\x00)"),
    (b"data: \n\n", "text/event-stream", "(it sent: nothing)"),
    (b"", "text/plain", "(it sent: nothing)"),
])
def test_a_body_that_is_not_an_event_stream_is_reported_with_what_it_sent(body, content_type, shown):
    error = final_error([RawReply(body, content_type)])
    assert error.kind == "protocol" and shown in error.message


def test_a_stalled_stream_ends_at_the_users_stall_limit_with_a_message_naming_it():
    head = (chunk(content="", role="assistant"), chunk(content="Hel"))
    started = time.monotonic()
    events, _ = run([SseReply(head, hold_open_s=30)], GenerationSettings(stall_seconds=1))
    assert time.monotonic() - started < 10
    assert events[0] == ContentDelta("Hel")
    assert events[-1].kind == "stall" and "sent nothing more for 1 s (the stall limit)" in events[-1].message


def test_an_engine_that_ignores_max_tokens_is_cut_off_by_the_client_and_disconnected():
    endless = tuple(chunk(content="word ") for _ in range(200))
    with ReplayServer([SseReply(endless, hold_open_s=30)]) as server:
        events = list(ChatClient(EndpointConfig(base_url=server.base_url)).stream(HELLO, GenerationSettings(
            max_tokens=10)))
        assert server.client_disconnected.wait(5), "the engine must see the disconnect and stop generating"
    shown = "".join(e.text for e in events if isinstance(e, ContentDelta))
    assert shown.count("word") == 10 + CAP_MARGIN_TOKENS + 1
    assert isinstance(events[-1], Finished) and events[-1].reason == "capped"


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
                        st.sampled_from(["choices", "delta", "content", "usage", "tool_calls", "index", "function",
                                         "finish_reason", "reasoning_content", "error", "id", "name"]), inner,
                        max_size=4), max_leaves=12)


@pytest.fixture(scope="module")
def replay():
    """One server and client for many examples: each example queues its reply, then asks."""
    with ReplayServer([]) as server:
        client = ChatClient(EndpointConfig(base_url=server.base_url))
        yield server, client
        client.close()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(JSON)
def test_any_json_event_ends_the_stream_with_an_event_never_an_exception(replay, value):
    server, client = replay
    server.replies.append(SseReply((chunk(content="Hi"), f"data: {json.dumps(value)}\n\n",
                                    chunk(finish_reason="stop"), DONE)))
    events = list(client.stream(HELLO, DEFAULTS))
    assert isinstance(events[-1], Finished | StreamError)


def test_an_engine_that_never_starts_answering_is_given_up_at_the_stall_limit():
    with socket.socket() as listener:  # accepts the connection (the kernel does), never answers
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        endpoint = EndpointConfig(base_url=f"http://127.0.0.1:{listener.getsockname()[1]}/v1")
        started = time.monotonic()
        [error] = list(ChatClient(endpoint).stream(HELLO, GenerationSettings(stall_seconds=1)))
    assert time.monotonic() - started < 10
    assert error.kind == "stall" and "did not start answering within 1 s (the stall limit)" in error.message
