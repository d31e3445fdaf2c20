"""Tool calls: the request's intent picks declared tools, arguments follow each schema, tool_choice is honoured,
and the answer after the tool results uses them."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from openai import OpenAI

from tests.sim_process import SimProcess, free_port, running_sim, sim_settings
from tests.sim_sse import ALL_TOOLS, CALCULATOR, PLAN_TRIP, SEARCH, WEATHER, chat, stream_chat

ENABLED = {"thinking_mode": "enabled"}


@pytest.fixture(scope="module")
def sim() -> Iterator[SimProcess]:
    with running_sim(sim_settings(free_port())) as process:
        yield process


def ask(text: str, tools: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"model": "MiniMax-M3", "messages": [{"role": "user", "content": text}], "tools": tools,
            "chat_template_kwargs": ENABLED, "skip_special_tokens": False, **extra}


def calls_of(sim: SimProcess, body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    streamed = stream_chat(sim.url, body)
    message = chat(sim.url, body).json()["choices"][0]["message"]
    whole = [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in message["tool_calls"] or []]
    assert [(c["name"], json.loads(c["arguments"])) for _, c in sorted(streamed.calls.items())] == whole
    return whole


def test_a_weather_question_calls_the_weather_tool_for_its_city(sim: SimProcess) -> None:
    got = stream_chat(sim.url, ask("What's the weather in Shanghai?", ALL_TOOLS))
    assert got.finish_reason == "tool_calls" and got.matched_stop == 200020
    assert [(c["name"], json.loads(c["arguments"])) for c in got.calls.values()] == [("get_weather",
                                                                                       {"city": "Shanghai"})]
    assert re.fullmatch(r"call_[0-9a-f]{24}", got.calls[0]["id"]) and "get_weather" in got.reasoning


def test_string_arguments_stream_piecewise_and_numbers_whole(sim: SimProcess) -> None:
    got = stream_chat(sim.url, ask("Weather in Rio de Janeiro for 14 days?", [WEATHER]))
    pieces = [c["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"] for c in got.chunks
              if c["choices"] and c["choices"][0]["delta"]["tool_calls"]]
    assert pieces[:4] == ["", "{", '"city": ', '"Rio']
    assert "14" in pieces and "".join(pieces) == '{"city": "Rio de Janeiro", "days": 14}'


def test_two_asks_become_two_parallel_calls(sim: SimProcess) -> None:
    assert calls_of(sim, ask("What's the weather in Paris and Tokyo?", ALL_TOOLS)) == [
        ("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Tokyo"})]
    assert calls_of(sim, ask("What is the weather in Berlin and what is 17 * 23?", ALL_TOOLS)) == [
        ("get_weather", {"city": "Berlin"}), ("calculator", {"expression": "17 * 23"})]


def test_arguments_are_typed_by_the_schema_including_nested_objects_and_arrays(sim: SimProcess) -> None:
    ((name, args),) = calls_of(sim, ask("Use plan_trip for Paris and Tokyo, 5 days", [PLAN_TRIP]))
    assert name == "plan_trip"
    assert args["cities"] == ["Paris", "Tokyo"] and args["days"] == 5 and args["budget"] == 1
    assert args["options"]["metric"] is False and isinstance(args["options"]["notes"], str)
    assert args["stops"] == [{"city": "Paris", "nights": 1}, {"city": "Tokyo", "nights": 1}]
    assert calls_of(sim, ask("search the web for kt-kernel AMX support", [SEARCH])) == [
        ("web_search", {"query": "kt-kernel AMX support"})]


def test_tool_choice_none_answers_without_calling(sim: SimProcess) -> None:
    got = stream_chat(sim.url, ask("What is 6 * 7?", [CALCULATOR], tool_choice="none"))
    assert got.calls == {} and got.content == "42" and got.finish_reason == "stop"


def test_tool_choice_required_calls_a_tool_even_for_small_talk(sim: SimProcess) -> None:
    (call,) = calls_of(sim, ask("hello there", [WEATHER], tool_choice="required"))
    assert call[0] == "get_weather" and set(call[1]) == {"city"}
    message = chat(sim.url, ask("hello there", [WEATHER], tool_choice="required")).json()["choices"][0]
    assert (message["finish_reason"], message["matched_stop"], message["message"]["content"]) == (
        "tool_calls", None, None)


def test_a_named_tool_choice_calls_only_that_tool(sim: SimProcess) -> None:
    choice = {"type": "function", "function": {"name": "calculator"}}
    assert calls_of(sim, ask("What's the weather in Oslo and what is 2 * 21?", ALL_TOOLS, tool_choice=choice)) == [
        ("calculator", {"expression": "2 * 21"})]


def test_tools_are_never_called_unless_declared(sim: SimProcess) -> None:
    got = stream_chat(sim.url, ask("Use get_stock_price for NVDA", [WEATHER]))
    assert got.calls == {} and got.finish_reason == "stop"


def test_after_the_tool_results_the_answer_uses_them(sim: SimProcess) -> None:
    client = OpenAI(base_url=f"{sim.url}/v1", api_key="unused", max_retries=0)
    messages: list[Any] = [{"role": "user", "content": "What is the weather in Paris and what is 17 * 23?"}]
    first = client.chat.completions.create(model="MiniMax-M3", messages=messages, tools=ALL_TOOLS,
                                           extra_body={"chat_template_kwargs": ENABLED})
    calls = first.choices[0].message.tool_calls
    assert first.choices[0].finish_reason == "tool_calls" and [c.function.name for c in calls] == [
        "get_weather", "calculator"]
    messages.append(first.choices[0].message.model_dump(exclude_none=True))
    results = ['{"temperature_c": 18, "condition": "sunny"}', "391"]
    messages += [{"role": "tool", "tool_call_id": c.id, "content": r} for c, r in zip(calls, results, strict=True)]
    final = client.chat.completions.create(model="MiniMax-M3", messages=messages, tools=ALL_TOOLS,
                                           extra_body={"chat_template_kwargs": ENABLED})
    answer = final.choices[0].message
    assert final.choices[0].finish_reason == "stop" and not answer.tool_calls
    assert 'get_weather(city="Paris") returned temperature c: 18, condition: sunny.' in answer.content
    assert 'calculator(expression="17 * 23") returned 391.' in answer.content
