"""Per-request stream and choice options over real HTTP: stream_reasoning, n, logprobs, continuous usage.

sglang-kt 0.7.2, serving_chat.OpenAIServingChat: _generate_chat_stream (a role chunk per choice with its
first output; content chunks alone carry `logprobs`, from _process_streaming_logprobs; with
stream_options.continuous_usage_stats the reasoning, content and tool-call chunks carry `usage`; one finish
chunk per index; the usage chunk counts the prompt once, UsageProcessor.calculate_streaming_usage),
_build_chat_response (one choice per sample, _process_response_logprobs), and the reasoning parser's
stream_reasoning=False (parser/reasoning_parser.py: the reasoning goes out whole when its block closes).
With n > 1 each choice is a request of its own (tokenizer_manager._handle_batch_request, regenerate_rid).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from launch.sim.logprobs import EOS_TEXT
from tests.sim_process import SimProcess, free_port, running_sim, sim_settings
from tests.sim_sse import assemble, chat, stream_chat

ASK = [{"role": "user", "content": "Solve step by step: 17 * 23"}]
THINKING = {"chat_template_kwargs": {"thinking_mode": "enabled"}, "skip_special_tokens": False}
PLAIN = {"chat_template_kwargs": {"thinking_mode": "disabled"}}  # no reasoning: every token is content


@pytest.fixture(scope="module")
def sim() -> Iterator[SimProcess]:
    with running_sim(sim_settings(free_port())) as process:
        yield process


def _choices(streamed_chunks: list[dict[str, Any]], index: int) -> list[dict[str, Any]]:
    return [c["choices"][0] for c in streamed_chunks if c["choices"] and c["choices"][0]["index"] == index]


def test_without_stream_reasoning_the_reasoning_comes_whole_when_its_block_closes(sim: SimProcess) -> None:
    streamed = stream_chat(sim.url, {"messages": ASK, **THINKING})
    held = stream_chat(sim.url, {"messages": ASK, **THINKING, "stream_reasoning": False})
    pieces = [c["delta"]["reasoning_content"] for c in _choices(held.chunks, 0) if c["delta"]["reasoning_content"]]
    assert len([c for c in _choices(streamed.chunks, 0) if c["delta"]["reasoning_content"]]) > 1
    assert pieces == [streamed.reasoning] and held.content == streamed.content
    first_content = next(i for i, c in enumerate(_choices(held.chunks, 0)) if c["delta"]["content"])
    reasoning_at = next(i for i, c in enumerate(_choices(held.chunks, 0)) if c["delta"]["reasoning_content"])
    assert reasoning_at <= first_content


def test_n_streams_every_choice_under_its_own_id_with_its_role_and_finish_chunk(sim: SimProcess) -> None:
    single = stream_chat(sim.url, {"messages": ASK, **PLAIN, "stream_options": {"include_usage": True}})
    streamed = stream_chat(sim.url, {"messages": ASK, **PLAIN, "n": 3, "stream_options": {"include_usage": True}})
    chunks = streamed.chunks
    ids = set()
    for index in range(3):
        choices = _choices(chunks, index)
        assert choices[0]["delta"]["role"] == "assistant" and choices[0]["delta"]["content"] == ""
        assert [c["finish_reason"] for c in choices if c["finish_reason"]] == ["stop"]
        assert choices[-1]["finish_reason"] == "stop"
        assert "".join(c["delta"]["content"] or "" for c in choices) == single.content
        ids |= {c["id"] for c in chunks[:-1] if c["choices"] and c["choices"][0]["index"] == index
                and c["choices"][0]["finish_reason"] is None}
    assert len(ids) == 3  # each sample is its own request
    assert {c["choices"][0]["index"] for c in chunks if c["choices"]} == {0, 1, 2}
    assert streamed.usage["prompt_tokens"] == single.usage["prompt_tokens"]  # the prompt counted once
    assert streamed.usage["completion_tokens"] == 3 * single.usage["completion_tokens"]


def test_n_answers_n_choices_indexed_in_order(sim: SimProcess) -> None:
    single = chat(sim.url, {"messages": ASK, **PLAIN}).json()
    body = chat(sim.url, {"messages": ASK, **PLAIN, "n": 2}).json()
    assert [c["index"] for c in body["choices"]] == [0, 1]
    assert all(c["message"] == single["choices"][0]["message"] for c in body["choices"])
    assert body["usage"]["prompt_tokens"] == single["usage"]["prompt_tokens"]
    assert body["usage"]["completion_tokens"] == 2 * single["usage"]["completion_tokens"]


def _assert_token_logprob(entry: dict[str, Any], top: int) -> None:
    assert set(entry) == {"token", "bytes", "logprob", "top_logprobs"}
    assert entry["bytes"] == list(entry["token"].encode("utf-8")) and entry["logprob"] <= 0
    assert len(entry["top_logprobs"]) == top
    for alternative in entry["top_logprobs"]:
        assert set(alternative) == {"token", "bytes", "logprob"}
        assert alternative["bytes"] == list(alternative["token"].encode("utf-8"))
    assert len({a["token"] for a in entry["top_logprobs"]}) == top  # a dict per position in sglang


@pytest.mark.parametrize("top", [None, 0, 3])
def test_logprobs_list_every_generated_token_in_a_whole_response(sim: SimProcess, top: int | None) -> None:
    body = chat(sim.url, {"messages": ASK, **PLAIN, "logprobs": True, "top_logprobs": top}).json()
    choice = body["choices"][0]
    content = choice["logprobs"]["content"]
    assert len(content) == body["usage"]["completion_tokens"]  # the end-of-turn token included
    assert "".join(e["token"] for e in content[:-1]) == choice["message"]["content"]
    for entry in content:
        _assert_token_logprob(entry, top or 0)
    assert chat(sim.url, {"messages": ASK, **PLAIN}).json()["choices"][0]["logprobs"] is None


def test_streamed_logprobs_ride_on_content_chunks_only(sim: SimProcess) -> None:
    streamed = stream_chat(sim.url, {"messages": ASK, **THINKING, "logprobs": True, "top_logprobs": 2})
    choices = _choices(streamed.chunks, 0)
    content_chunks = [c for c in choices if c["delta"]["content"]]
    assert content_chunks and all(c["logprobs"] is not None for c in content_chunks)
    for number, chunk in enumerate(content_chunks, 1):
        tokens = "".join(e["token"] for e in chunk["logprobs"]["content"])
        # The last increment also brings the end-of-turn token's logprob, a token with no text in the content.
        assert tokens == chunk["delta"]["content"] + (EOS_TEXT if number == len(content_chunks) else "")
        for entry in chunk["logprobs"]["content"]:
            _assert_token_logprob(entry, 2)
    assert all(c["logprobs"] is None for c in choices if not c["delta"]["content"])  # role, reasoning, finish


def test_continuous_usage_stats_put_the_usage_so_far_on_every_output_chunk(sim: SimProcess) -> None:
    options = {"include_usage": True, "continuous_usage_stats": True}
    streamed = stream_chat(sim.url, {"messages": ASK, **THINKING, "stream_options": options})
    chunks = streamed.chunks
    output = [c for c in chunks if c["choices"] and (c["choices"][0]["delta"]["content"]
                                                     or c["choices"][0]["delta"]["reasoning_content"])]
    assert len(output) > 2 and all(c["usage"] is not None for c in output)
    counts = [c["usage"]["completion_tokens"] for c in output]
    assert counts == sorted(counts) and counts[-1] <= streamed.usage["completion_tokens"]
    assert {c["usage"]["prompt_tokens"] for c in output} == {streamed.usage["prompt_tokens"]}
    assert all(c["usage"]["total_tokens"] == c["usage"]["prompt_tokens"] + c["usage"]["completion_tokens"]
               for c in output)
    role, finish = chunks[0], next(c for c in chunks if c["choices"] and c["choices"][0]["finish_reason"])
    assert role["usage"] is None and finish["usage"] is None
    plain = assemble(stream_chat(sim.url, {"messages": ASK, **THINKING}).events)
    assert all(c["usage"] is None for c in plain.chunks)  # without the option, no usage at all
