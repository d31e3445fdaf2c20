"""Paced reads (ChatStream's read_gap): once a token has come, the engine's stream is read at most once per gap and
each read takes everything sent meanwhile; nothing is lost, the first token is not held back, stop() is not
delayed. Against a real HTTP server on 127.0.0.1 that sends one token every 20 ms."""

from __future__ import annotations

import threading
import time

from m3ui.client import ChatClient, ContentDelta, EndpointConfig, Finished, GenerationSettings
from tests.sse_replay import DONE, ReplayServer, SseReply, chunk, usage_chunk

HELLO = [{"role": "user", "content": "hello"}]
WORDS = [f"w{i} " for i in range(40)]


def token_reply(delay_s: float = 0.02) -> SseReply:
    events = [chunk(content="", role="assistant"), *(chunk(content=word) for word in WORDS),
              chunk(finish_reason="stop"), usage_chunk(5, len(WORDS)), DONE]
    return SseReply(tuple(events), delay_s=delay_s)


def bursts(times: list[float], within_s: float = 0.005) -> int:
    """How many groups of arrivals, each within `within_s` of the one before."""
    return 1 + sum(1 for before, after in zip(times, times[1:], strict=False) if after - before > within_s)


def test_paced_reads_take_what_came_meanwhile_and_lose_nothing():
    with ReplayServer([token_reply()]) as server:
        client = ChatClient(EndpointConfig(base_url=server.base_url))
        arrivals: list[float] = []
        events = []
        for event in client.stream(HELLO, GenerationSettings(), read_gap=lambda: 0.15):
            events.append(event)
            if isinstance(event, ContentDelta):
                arrivals.append(time.monotonic())
        client.close()
    assert "".join(e.text for e in events if isinstance(e, ContentDelta)) == "".join(WORDS)
    assert isinstance(events[-1], Finished) and events[-1].stats.completion_tokens == len(WORDS)
    # 40 tokens over ~0.8 s arrive in a handful of reads (the first token's, then one per 0.15 s), not 40
    assert bursts(arrivals) <= 9, f"{bursts(arrivals)} separate arrivals"


def test_the_first_token_is_not_held_back_by_the_gap():
    head = (chunk(content="", role="assistant"), chunk(content="Hello"))  # then the engine thinks on
    with ReplayServer([SseReply(head, delay_s=0.05, hold_open_s=30)]) as server:
        client = ChatClient(EndpointConfig(base_url=server.base_url))
        stream = client.stream(HELLO, GenerationSettings(), read_gap=lambda: 10.0)
        started = time.monotonic()
        first = next(e for e in stream if isinstance(e, ContentDelta))
        waited = time.monotonic() - started
        stream.stop()
        list(stream)
        client.close()
    assert first.text == "Hello"
    assert waited < 2, f"the first token waited {waited:.1f} s"


def test_stop_cuts_a_paced_wait_short_and_the_engine_sees_the_disconnect():
    with ReplayServer([token_reply(delay_s=0.05)]) as server:
        client = ChatClient(EndpointConfig(base_url=server.base_url))
        stream = client.stream(HELLO, GenerationSettings(), read_gap=lambda: 30.0)
        next(e for e in stream if isinstance(e, ContentDelta))  # then the stream waits out its 30 s gap
        threading.Timer(0.2, stream.stop).start()
        started = time.monotonic()
        rest = list(stream)
        ended = time.monotonic() - started
        client.close()
        assert server.client_disconnected.wait(5)
    assert ended < 3, f"stop() took {ended:.1f} s"
    assert isinstance(rest[-1], Finished) and rest[-1].reason == "cancelled"
