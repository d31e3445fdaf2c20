"""Chat completions as a client sees them: the samples' stream shapes, thinking modes, M3's multi-turn quirk,
length cuts, context overflow, scheduler aborts, disconnects, and the openai SDK on top."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from openai import OpenAI

from launch.sim.answers import SELF_DESCRIPTION, plan_reply
from launch.sim.generation import raw_output
from launch.sim.request import ChatRequest, to_conversation
from launch.sim.tokens import tokenize
from tests.sim_process import ROOT, SimProcess, free_port, running_sim, sim_settings, start_sim  # noqa: F401
from tests.sim_sse import WEATHER, assemble, chat, stream_chat

SAMPLES: dict[str, list[str]] = json.loads((ROOT / "tests" / "data" / "sglang_stream_samples.json").read_text())
CONTEXT = 8192
KV_TOKENS = 4096


def ask(text: str, mode: str | None = None, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "MiniMax-M3", "messages": [{"role": "user", "content": text}],
                            "skip_special_tokens": False, **extra}
    if mode is not None:
        body["chat_template_kwargs"] = {"thinking_mode": mode}
    return body


@pytest.fixture(scope="module")
def sim() -> Iterator[SimProcess]:
    settings = sim_settings(free_port(), max_total_tokens=KV_TOKENS, extra_args=f"--context-length {CONTEXT}")
    with running_sim(settings) as process:
        yield process


def _kind(chunk: dict[str, Any]) -> str:
    if "error" in chunk:
        return "error"
    if not chunk["choices"]:
        return "usage"
    choice = chunk["choices"][0]
    delta = choice["delta"]
    if choice["finish_reason"] is not None:
        return "finish"
    if delta["role"] is not None:
        return "role"
    if delta["tool_calls"]:
        return "tool_start" if delta["tool_calls"][0]["id"] else "tool_args"
    return "reasoning" if delta["reasoning_content"] is not None else "content"


def _shape(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shape(v) for v in value[:1]]
    return type(value).__name__


def _profile(events: list[str]) -> tuple[list[str], dict[str, set[str]]]:
    """The kinds of chunk in stream order (runs collapsed) and the JSON shapes of each kind."""
    assert events[-1] == "data: [DONE]\n\n" and all(e.startswith("data: ") and e.endswith("\n\n") for e in events)
    chunks = [json.loads(e[6:]) for e in events[:-1]]
    order = [_kind(c) for c in chunks]
    collapsed = [k for i, k in enumerate(order) if i == 0 or order[i - 1] != k]
    shapes: dict[str, set[str]] = {}
    for kind, chunk in zip(order, chunks, strict=True):
        shapes.setdefault(kind, set()).add(json.dumps(_shape(chunk), sort_keys=True))
    return collapsed, shapes


def _tokens_of(body: dict[str, Any]) -> int:
    request = ChatRequest.model_validate(body)
    return len(tokenize(raw_output(request, plan_reply(to_conversation(request)))))


def _sample_case_bodies() -> dict[str, dict[str, Any]]:
    b_body = ask("What is 2+2?", "enabled")
    return {
        "A_tools_reasoning_include_usage": ask("What's the weather in Paris?", "adaptive", tools=[WEATHER],
                                               stream_options={"include_usage": True}),
        "B_enabled_prefilled_length_cut": {**b_body, "max_tokens": _tokens_of(b_body)},
        "C_scheduler_abort_400": ask("word " * (KV_TOKENS + 100), "enabled"),
        "D_valueerror_in_generate": ask("word " * CONTEXT, "enabled"),
        "E_separate_reasoning_false": ask("What is 2+2?", "adaptive", separate_reasoning=False),
    }


@pytest.mark.parametrize("case", list(SAMPLES))
def test_each_stream_has_the_shape_of_sglangs_own_sample(sim: SimProcess, case: str) -> None:
    got = stream_chat(sim.url, _sample_case_bodies()[case])
    assert _profile(got.events) == _profile(SAMPLES[case])
    expected = assemble(SAMPLES[case])
    assert (got.finish_reason, type(got.matched_stop)) == (expected.finish_reason, type(expected.matched_stop))
    for chunk in got.chunks:
        assert "error" in chunk or re.fullmatch(r"[0-9a-f]{32}", chunk["id"])
    assert all(re.fullmatch(r"call_[0-9a-f]{24}", c["id"]) for c in got.calls.values())


def test_the_samples_stream_cases_carry_their_meaning(sim: SimProcess) -> None:
    bodies = _sample_case_bodies()
    weather = stream_chat(sim.url, bodies["A_tools_reasoning_include_usage"])
    assert json.loads(weather.calls[0]["arguments"]) == {"city": "Paris"} and weather.matched_stop == 200020
    assert weather.usage["completion_tokens"] > 0 and weather.usage["reasoning_tokens"] == 0
    cut = stream_chat(sim.url, bodies["B_enabled_prefilled_length_cut"])
    assert cut.content == "4" and cut.finish_reason == "length"
    aborted = stream_chat(sim.url, bodies["C_scheduler_abort_400"])
    assert (aborted.content, aborted.reasoning, aborted.finish_reason) == ("", "", "abort")
    overflow = stream_chat(sim.url, bodies["D_valueerror_in_generate"])
    assert overflow.error == {"object": "error", "type": "BadRequestError", "param": None, "code": 400,
                              "message": f"The input ({_prompt_len(bodies['D_valueerror_in_generate'])} tokens) "
                                         f"is longer than the model's context length ({CONTEXT} tokens)."}
    raw = stream_chat(sim.url, bodies["E_separate_reasoning_false"])
    assert raw.reasoning == "" and raw.content.startswith("<mm:think>") and "</mm:think>4" in raw.content


def _prompt_len(body: dict[str, Any]) -> int:
    from launch.sim.request import prompt_texts
    from launch.sim.tokens import prompt_tokens

    return len(prompt_tokens(prompt_texts(ChatRequest.model_validate(body))))


def test_over_long_inputs_are_400s_without_streaming(sim: SimProcess) -> None:
    for text, fragment in (("word " * CONTEXT, "is longer than the model's context length"),
                           ("word " * (KV_TOKENS + 100), "exceeds the maximum allowed length")):
        response = chat(sim.url, ask(text))
        assert response.status_code == 400 and fragment in response.json()["message"]


def test_with_context_length_set_max_tokens_beyond_it_is_refused_before_streaming(sim: SimProcess) -> None:
    body = ask("hi", max_tokens=CONTEXT + 1)
    message = (f"max_completion_tokens is too large: {CONTEXT + 1}."  # sic: sglang's message lacks the space
               f"This model supports at most {CONTEXT} completion tokens.")
    for stream in (False, True):
        response = httpx.post(f"{sim.url}/v1/chat/completions", json={**body, "stream": stream}, timeout=30)
        assert (response.status_code, response.json()["message"]) == (400, message)


def test_out_of_range_sampling_settings_are_refused_like_the_tokenizer_manager_does(sim: SimProcess) -> None:
    body = ask("What is 2+2?", top_p=0.0)
    assert stream_chat(sim.url, body).error["message"] == "top_p must be in (0, 1], got 0.0."
    response = chat(sim.url, {**body, "top_p": 0.9, "temperature": -1})
    assert response.status_code == 400 and response.json()["message"] == "temperature must be non-negative, got -1.0."


def test_thinking_enabled_puts_the_working_in_reasoning_and_the_result_in_content(sim: SimProcess) -> None:
    got = stream_chat(sim.url, ask("Solve step by step: 17 * 23", "enabled"))
    assert "17 × 20 + 17 × 3 = 340 + 51 = 391" in got.reasoning
    assert got.content.startswith("Step by step:") and "**391**" in got.content
    message = chat(sim.url, ask("Solve step by step: 17 * 23", "enabled")).json()["choices"][0]["message"]
    assert "391" in message["reasoning_content"] and "**391**" in message["content"]


def test_thinking_disabled_answers_without_reasoning(sim: SimProcess) -> None:
    message = chat(sim.url, ask("What is 2+2?", "disabled")).json()["choices"][0]["message"]
    assert (message["content"], message["reasoning_content"]) == ("4", None)


def test_adaptive_thinks_about_arithmetic_but_not_about_a_greeting(sim: SimProcess) -> None:
    assert "4" in stream_chat(sim.url, ask("What is 2+2?", "adaptive")).reasoning
    greeting = stream_chat(sim.url, ask("hello", "adaptive"))
    assert greeting.reasoning == "" and greeting.content.startswith("Hello!")


def test_without_thinking_mode_a_later_turn_starts_with_a_stray_think_close_tag(sim: SimProcess) -> None:
    history = [{"role": "user", "content": "What is 2+2?"}, {"role": "assistant", "content": "4"},
               {"role": "user", "content": "And 3 * 3?"}]
    quirk = stream_chat(sim.url, {"messages": history, "skip_special_tokens": False})
    assert quirk.content == "</mm:think>9" and quirk.reasoning == ""
    explicit = stream_chat(sim.url, {"messages": history, "skip_special_tokens": False,
                                     "chat_template_kwargs": {"thinking_mode": "adaptive"}})
    assert explicit.content == "9" and "9" in explicit.reasoning
    first_turn = stream_chat(sim.url, {"messages": history[:1], "skip_special_tokens": False})
    assert first_turn.content == "4"


def test_a_length_cut_inside_reasoning_leaves_everything_in_reasoning(sim: SimProcess) -> None:
    body = ask("Solve step by step: 17 * 23", "enabled", max_tokens=6)
    got = stream_chat(sim.url, body)
    assert got.content == "" and got.reasoning.startswith("The user") and got.finish_reason == "length"
    choice = chat(sim.url, body).json()["choices"][0]
    assert choice["message"]["content"] is None and choice["finish_reason"] == "length"
    assert choice["message"]["reasoning_content"] == got.reasoning.strip()


def test_default_skip_special_tokens_strips_m3s_think_tags_from_the_text(sim: SimProcess) -> None:
    body = ask("What is 2+2?", "adaptive")
    del body["skip_special_tokens"]
    got = stream_chat(sim.url, body)
    assert got.reasoning == "" and got.content.startswith("The user wants 2 + 2.") and got.content.endswith("4")


def test_it_says_it_is_a_simulated_engine_and_answers_the_same_way_every_time(sim: SimProcess) -> None:
    first = chat(sim.url, ask("Who are you?", "disabled")).json()["choices"][0]["message"]["content"]
    assert first == SELF_DESCRIPTION and "simulated" in first and "MiniMax-M3" in first
    assert chat(sim.url, ask("Who are you?", "disabled")).json()["choices"][0]["message"]["content"] == first


def test_non_streaming_responses_have_sglangs_shape(sim: SimProcess) -> None:
    body = chat(sim.url, ask("What is 2+2?", "enabled", rid="f" * 32)).json()
    assert set(body) == {"id", "object", "created", "model", "choices", "usage", "metadata"}
    assert (body["id"], body["object"], body["model"]) == ("f" * 32, "chat.completion", "MiniMax-M3")
    (choice,) = body["choices"]
    assert set(choice) == {"index", "message", "logprobs", "finish_reason", "matched_stop"}
    assert set(choice["message"]) == {"role", "content", "reasoning_content", "tool_calls"}
    assert (choice["finish_reason"], choice["matched_stop"]) == ("stop", 200020)
    assert set(body["usage"]) == {"prompt_tokens", "total_tokens", "completion_tokens", "prompt_tokens_details",
                                  "reasoning_tokens"}


def test_the_openai_sdk_streams_reasoning_answer_and_usage(sim: SimProcess) -> None:
    client = OpenAI(base_url=f"{sim.url}/v1", api_key="unused", max_retries=0)
    stream = client.chat.completions.create(
        model="MiniMax-M3", messages=[{"role": "user", "content": "Solve step by step: 17 * 23"}], stream=True,
        stream_options={"include_usage": True},
        extra_body={"chat_template_kwargs": {"thinking_mode": "enabled"}, "skip_special_tokens": False})
    reasoning, content, usage = "", "", None
    for chunk in stream:
        usage = chunk.usage or usage
        for choice in chunk.choices:
            reasoning += (choice.delta.model_extra or {}).get("reasoning_content") or ""
            content += choice.delta.content or ""
    assert "391" in reasoning and "**391**" in content and usage.completion_tokens > 10


def test_a_client_hanging_up_stops_generation_and_counts_an_abort(start_sim) -> None:  # noqa: F811
    sim = start_sim(sim_settings(free_port(), enable_metrics=True),
                    env={"M3UI_SIM_UNTHROTTLED": "0", "M3UI_SIM_DECODE_TPS": "50"})
    sim.wait_ready()
    with httpx.stream("POST", f"{sim.url}/v1/chat/completions", timeout=10,
                      json=ask("count to 3000", stream=True)) as response:
        lines = response.iter_lines()
        for _ in range(6):
            next(lines)
        assert httpx.get(f"{sim.url}/v1/loads", timeout=5).json()["loads"][0]["num_running_reqs"] == 1
    deadline = time.monotonic() + 5
    while httpx.get(f"{sim.url}/v1/loads", timeout=5).json()["loads"][0]["num_running_reqs"] and \
            time.monotonic() < deadline:
        time.sleep(0.05)
    assert httpx.get(f"{sim.url}/v1/loads", timeout=5).json()["loads"][0]["num_running_reqs"] == 0
    metrics = httpx.get(f"{sim.url}/metrics", timeout=5).text
    assert re.search(r'^sglang:num_aborted_requests_total\{model_name="MiniMax-M3"\} 1\.0$', metrics, re.M)
    generated = float(re.search(r"^sglang:generation_tokens_total\{.*\} (\S+)$", metrics, re.M).group(1))
    time.sleep(0.3)
    again = httpx.get(f"{sim.url}/metrics", timeout=5).text
    assert float(re.search(r"^sglang:generation_tokens_total\{.*\} (\S+)$", again, re.M).group(1)) == generated



def test_metrics_are_only_served_with_enable_metrics(sim: SimProcess) -> None:
    assert httpx.get(f"{sim.url}/metrics", timeout=5).status_code == 404
