"""The simulated engine's /v1/completions and /v1/responses over real HTTP, shaped as sglang-kt 0.7.2 shapes them.

/v1/completions: entrypoints/openai/serving_completions.py (OpenAIServingCompletion._validate_request,
_generate_completion_stream, _build_completion_response) and protocol.py's CompletionRequest.
/v1/responses: entrypoints/openai/serving_responses.py (create_responses, _make_request, responses_full_generator,
_make_response_output_items, responses_stream_generator_non_harmony, _response_event) and protocol.py's
ResponsesRequest.to_sampling_params and ResponsesResponse.from_request; the route in http_server.py
(v1_responses_request: `ResponsesRequest(**request)` with no handler of its own).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.sim_process import SimProcess, free_port, running_sim, sim_settings

WEATHER = {"type": "function", "name": "get_weather", "description": "The weather now in a city",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}


@pytest.fixture(scope="module")
def sim() -> Iterator[SimProcess]:
    with running_sim(sim_settings(free_port())) as process:
        yield process


def _post(sim: SimProcess, path: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(sim.url + path, json=body, timeout=60)


def _data(text: str) -> list[str]:
    return [event[6:] for event in text.split("\n\n") if event.startswith("data: ")]


def _events(text: str) -> list[dict[str, Any]]:
    """Responses events: each `event:` line names the type its data says."""
    out = []
    for block in text.split("\n\n"):
        if not block:
            continue
        name, data = block.split("\n")
        assert name.startswith("event: ") and data.startswith("data: "), block
        event = json.loads(data[6:])
        assert event["type"] == name[7:]
        out.append(event)
    return out


def test_completion_whole_counts_the_raw_prompt_and_caps_at_max_tokens(sim: SimProcess) -> None:
    body = _post(sim, "/v1/completions", {"model": "m", "prompt": "What is 17 * 23?", "max_tokens": 12}).json()
    assert body["object"] == "text_completion" and body["metadata"] == {"weight_version": "default"}
    choice = body["choices"][0]
    assert set(choice) == {"index", "text", "logprobs", "finish_reason", "matched_stop"}
    assert choice["finish_reason"] == "length" and choice["text"]
    usage = body["usage"]  # UsageInfo in full: prompt_tokens_details null, reasoning_tokens 0
    assert usage == {"prompt_tokens": usage["prompt_tokens"], "total_tokens": usage["prompt_tokens"] + 12,
                     "completion_tokens": 12, "prompt_tokens_details": None, "reasoning_tokens": 0}
    assert 0 < usage["prompt_tokens"] < 20  # the prompt's own tokens: no chat template around it


def test_completion_defaults_to_16_tokens_and_echo_prepends_the_prompt(sim: SimProcess) -> None:
    body = _post(sim, "/v1/completions", {"model": "m", "prompt": "Say hello", "echo": True}).json()
    assert body["usage"]["completion_tokens"] == 16 and body["choices"][0]["text"].startswith("Say hello")


def test_completion_stream_chunks_then_usage_then_done(sim: SimProcess) -> None:
    text = _post(sim, "/v1/completions", {"model": "m", "prompt": "Say hello", "max_tokens": 8, "stream": True,
                                          "stream_options": {"include_usage": True}}).text
    data = _data(text)
    assert data[-1] == "[DONE]"
    chunks = [json.loads(d) for d in data[:-1]]
    *increments, usage_chunk = chunks
    assert len(increments) == 8 and all(c["usage"] is None and len(c["choices"]) == 1 for c in increments)
    assert [c["choices"][0]["finish_reason"] for c in increments] == [None] * 7 + ["length"]
    assert set(increments[0]["choices"][0]) == {"index", "text", "logprobs", "finish_reason", "matched_stop"}
    # the usage chunk is dumped with exclude_none: no prompt_tokens_details key
    assert usage_chunk["choices"] == [] and usage_chunk["usage"]["completion_tokens"] == 8
    assert "prompt_tokens_details" not in usage_chunk["usage"] and usage_chunk["object"] == "text_completion"


def test_completion_stream_without_usage_asked_has_none(sim: SimProcess) -> None:
    data = _data(_post(sim, "/v1/completions", {"model": "m", "prompt": "Hi", "max_tokens": 4, "stream": True}).text)
    assert data[-1] == "[DONE]" and all(json.loads(d)["choices"] for d in data[:-1])


@pytest.mark.parametrize(("body", "message"), [
    ({"prompt": ""}, "Prompt cannot be empty"),  # _validate_request
    ({"prompt": ["", ""]}, "Prompt cannot be empty"),
    ({"prompt": "hi", "max_tokens": 0}, "max_tokens must be positive"),  # the field validator: a schema 400
    ({"max_tokens": 5}, "prompt"),  # a required field
])
def test_completion_refusals(sim: SimProcess, body: dict[str, Any], message: str) -> None:
    answer = _post(sim, "/v1/completions", {"model": "m", **body})
    assert answer.status_code == 400 and message in answer.json()["message"]
    assert answer.json()["object"] == "error"


def test_responses_whole_is_a_completed_response_with_usage(sim: SimProcess) -> None:
    body = _post(sim, "/v1/responses", {"model": "m", "input": "What is 17 * 23?", "max_output_tokens": 300,
                                        "instructions": "Be brief."}).json()
    assert body["object"] == "response" and body["status"] == "completed" and body["id"].startswith("resp_")
    message = [item for item in body["output"] if item["type"] == "message"]
    assert len(message) == 1 and "391" in message[0]["content"][0]["text"]
    assert message[0]["content"][0]["type"] == "output_text" and body["text"] == {"format": {"type": "text"}}
    usage = body["usage"]
    assert set(usage) == {"input_tokens", "input_tokens_details", "output_tokens", "output_tokens_details",
                          "total_tokens"}
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"] and usage["output_tokens"] > 0
    assert body["instructions"] == "Be brief." and body["max_output_tokens"] == 300 and body["store"] is True


def test_responses_max_output_tokens_leaves_two_for_the_context(sim: SimProcess) -> None:
    """to_sampling_params: max_new_tokens = min(max_output_tokens, default) - 2."""
    body = _post(sim, "/v1/responses", {"model": "m", "input": "What is 17 * 23?", "max_output_tokens": 10}).json()
    assert body["usage"]["output_tokens"] == 8
    none_left = _post(sim, "/v1/responses", {"model": "m", "input": "What is 17 * 23?", "max_output_tokens": 2})
    assert none_left.json()["usage"]["output_tokens"] == 0  # max_new_tokens 0: nothing, not unbounded


def test_responses_stream_event_sequence(sim: SimProcess) -> None:
    events = _events(_post(sim, "/v1/responses", {"model": "m", "input": "What is the weather in Paris?",
                                                  "stream": True, "tools": [WEATHER]}).text)
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert [e["type"] for e in events[:2]] == ["response.created", "response.in_progress"]
    assert events[0]["response"]["status"] == "in_progress" and events[0]["response"]["usage"] is None
    assert events[0]["response"]["tools"] == []  # 0.7.2 echoes no tools in the stream
    kinds = [e["type"] for e in events]
    assert kinds[-1] == "response.completed"
    added = [e["item"]["type"] for e in events if e["type"] == "response.output_item.added"]
    done = [e["item"] for e in events if e["type"] == "response.output_item.done"]
    assert added == [item["type"] for item in done] and "function_call" in added
    call = next(item for item in done if item["type"] == "function_call")
    assert call["name"] == "get_weather" and json.loads(call["arguments"]) == {"city": "Paris"}
    assert call["id"].startswith("fc_") and len(call["id"]) == 11 and call["call_id"].startswith("call_")
    deltas = "".join(e["delta"] for e in events if e["type"] == "response.function_call_arguments.delta")
    assert deltas == call["arguments"]
    assert kinds.index("response.function_call_arguments.done") < kinds.index("response.completed")
    final = events[-1]["response"]
    assert final["status"] == "completed" and final["output"] == done and final["usage"]["output_tokens"] > 0
    assert all(e["delta"].strip() for e in events if e["type"] == "response.output_text.delta")


def test_responses_stream_text_deltas_add_up_to_the_done_text(sim: SimProcess) -> None:
    events = _events(_post(sim, "/v1/responses", {"model": "m", "input": "Say hello", "stream": True}).text)
    deltas = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
    done = [e["text"] for e in events if e["type"] == "response.output_text.done"]
    assert done == [deltas] and deltas


def test_responses_function_call_output_continues_the_conversation(sim: SimProcess) -> None:
    body = _post(sim, "/v1/responses", {"model": "m", "tools": [WEATHER], "input": [
        {"role": "user", "content": "What is the weather in Paris?"},
        {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": '{"city": "Paris"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "sunny, 21 C"}]}).json()
    assert body["status"] == "completed" and any(item["type"] == "message" for item in body["output"])


def test_responses_refusals_in_the_nested_envelope(sim: SimProcess) -> None:
    bad_id = _post(sim, "/v1/responses", {"input": "hi", "previous_response_id": "nope"})
    assert bad_id.status_code == 400 and bad_id.json()["error"]["param"] == "response_id"
    unknown = _post(sim, "/v1/responses", {"input": "hi", "previous_response_id": "resp_123"})
    assert unknown.status_code == 404 and "not found" in unknown.json()["error"]["message"]
    unnamed = _post(sim, "/v1/responses", {"input": "hi", "tools": [{"type": "function"}]})
    assert unnamed.status_code == 400
    assert unnamed.json()["error"] == {"message": "Responses function tools require a non-empty name. None",
                                       "type": "invalid_request_error", "param": None, "code": 400}
    not_json = httpx.post(sim.url + "/v1/responses", content=b"{", headers={"content-type": "application/json"})
    assert not_json.status_code == 400 and not_json.json()["error"]["type"] == "Bad Request"
    # no `input`: ResponsesRequest(**request) raises inside the route, which no handler turns into a 400
    missing = _post(sim, "/v1/responses", {"model": "m"})
    assert missing.status_code == 500
