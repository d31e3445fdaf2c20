"""The gateway's usage tap, however the engine's bytes are cut into reads: the bytes pass unchanged (less OpenAI's
usage-only chunk when the gateway asked for it), and the usage of each API's stream is found."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from m3ui.gateway.usage_stream import UsageTap, body_usage


def event(value: object, name: str | None = None) -> bytes:
    head = f"event: {name}\n" if name else ""
    return f"{head}data: {json.dumps(value)}\n\n".encode()


CHUNKS = [event({"choices": [{"index": 0, "delta": {"content": word}}], "usage": None}) for word in ("Hi", " there")]
USAGE = event({"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 2}})
OPENAI = b"".join(CHUNKS) + USAGE + b"data: [DONE]\n\n"
ANTHROPIC = (event({"type": "message_start", "message": {"usage": {"input_tokens": 0, "output_tokens": 0}}},
                   "message_start")
             + event({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                      "usage": {"input_tokens": 30, "output_tokens": 7}}, "message_delta")
             + event({"type": "message_stop"}, "message_stop"))


def through(tap: UsageTap, data: bytes, cuts: list[int]) -> bytes:
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    out = b"".join(tap.feed(data[a:b]) for a, b in zip(points, points[1:], strict=False))
    return out + tap.flush()


@given(st.lists(st.integers(min_value=0, max_value=10_000), max_size=12))
def test_openai_usage_chunk_is_read_and_stripped_when_asked_for(cuts):
    tap = UsageTap(strip_usage_chunk=True)
    assert through(tap, OPENAI, cuts) == b"".join(CHUNKS) + b"data: [DONE]\n\n"
    assert tap.usage == (12, 2)


@given(st.lists(st.integers(min_value=0, max_value=10_000), max_size=12))
def test_bytes_pass_unchanged_when_the_client_asked_for_usage(cuts):
    tap = UsageTap(strip_usage_chunk=False)
    assert through(tap, OPENAI, cuts) == OPENAI and tap.usage == (12, 2)


@given(st.lists(st.integers(min_value=0, max_value=10_000), max_size=12))
def test_anthropic_usage_is_the_message_deltas(cuts):
    tap = UsageTap(strip_usage_chunk=False)
    assert through(tap, ANTHROPIC, cuts) == ANTHROPIC and tap.usage == (30, 7)


def test_whole_bodies_of_each_api():
    assert body_usage(b'{"usage": {"prompt_tokens": 3, "completion_tokens": 4}}') == (3, 4)
    assert body_usage(b'{"usage": {"input_tokens": 5, "output_tokens": 6}}') == (5, 6)
    assert body_usage(b'{"response": {"usage": {"input_tokens": 7, "output_tokens": 8}}}') == (7, 8)
    assert body_usage(b"not json") is None and body_usage(b"[1]") is None
