"""The tool demo on the simulated engine does what it promises: natural requests call the built-in tools with
arguments taken from the prompt, a custom tool's nested schema is filled from what the prompt says, numbers
that are not arithmetic stay unevaluated, comparisons and big integers are answered exactly."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import date
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from launch.sim.prompt_values import head_count, person_name, phone_number, stated_date, stated_time
from launch.sim.time_zones import zone_for
from launch.sim.tool_intent import ToolSpec, plan_calls
from launch.sim.units import UNITS, find_conversions
from m3ui.chat_session import EXAMPLE_CUSTOM_TOOL
from m3ui.client import ChatClient, EndpointConfig, GenerationSettings
from m3ui.conversation import Conversation, LoopOptions, ToolLoop
from m3ui.conversation.tool_loop import LoopFinished, ToolExecutionFinished
from m3ui.tools import builtin_registry
from m3ui.tools.units import convert_units
from tests.sim_process import SimProcess, free_port, running_sim, sim_settings
from tests.sim_sse import chat, stream_chat

BUILTIN = builtin_registry().openai_tools()
CALCULATOR = [t for t in BUILTIN if t["function"]["name"] == "calculator"]
BOOK_TABLE = {"type": "function", "function": {
    "name": "book_table", "description": "Book a restaurant table.",
    "parameters": {"type": "object", "properties": {
        "restaurant": {"type": "string"},
        "party": {"type": "object", "properties": {
            "size": {"type": "integer"}, "name": {"type": "string"}, "phone": {"type": "string"}},
            "required": ["size", "name"]},
        "when": {"type": "object", "properties": {
            "date": {"type": "string", "format": "date"}, "time": {"type": "string"}}, "required": ["date", "time"]},
        "outdoor": {"type": "boolean"}},
        "required": ["restaurant", "party", "when"]}}}


@pytest.fixture(scope="module")
def sim() -> Iterator[SimProcess]:
    with running_sim(sim_settings(free_port())) as process:
        yield process


def ask(text: str, tools: list[dict[str, Any]]) -> dict[str, Any]:
    return {"model": "MiniMax-M3", "messages": [{"role": "user", "content": text}], "tools": tools,
            "chat_template_kwargs": {"thinking_mode": "enabled"}, "skip_special_tokens": False}


def streamed_calls(sim: SimProcess, text: str, tools: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    got = stream_chat(sim.url, ask(text, tools))
    return [(c["name"], json.loads(c["arguments"])) for _, c in sorted(got.calls.items())]


@pytest.mark.parametrize(("text", "expected"), [
    ("Convert 10 miles to kilometers", [("convert_units", {"value": 10, "from_unit": "mi", "to_unit": "km"})]),
    ("How many pounds is 5 kg?", [("convert_units", {"value": 5, "from_unit": "kg", "to_unit": "lb"})]),
    ("What time is it in Tokyo?", [("current_time", {"timezone": "Asia/Tokyo"})]),
    ("What's the local time in San Francisco and London?", [("current_time", {"timezone": "America/Los_Angeles"}),
                                                             ("current_time", {"timezone": "Europe/London"})]),
    ("Weather in Oslo and Lima", [("get_weather", {"city": "Oslo"}), ("get_weather", {"city": "Lima"})]),
    ("Search the docs for kt-num-gpu-experts", [("search_docs", {"query": "kt-num-gpu-experts"})]),
])
def test_natural_requests_call_the_builtin_tools_with_arguments_from_the_prompt(
        sim: SimProcess, text: str, expected: list[tuple[str, dict[str, Any]]]) -> None:
    assert streamed_calls(sim, text, BUILTIN) == expected


def test_a_nested_custom_schema_is_filled_from_the_prompt_and_a_phone_number_is_not_arithmetic(sim: SimProcess) -> None:
    text = ("Book a table at Chez Marie for 3 people on 2026-12-24 at 7:30 pm, under the name Alice Martin, "
            "phone 555-0100.")
    assert streamed_calls(sim, text, [*BUILTIN, BOOK_TABLE]) == [("book_table", {
        "restaurant": "Chez Marie", "party": {"size": 3, "name": "Alice Martin", "phone": "555-0100"},
        "when": {"date": "2026-12-24", "time": "19:30"}})]


def test_the_apps_example_custom_tool_gets_the_order_id_from_the_prompt(sim: SimProcess) -> None:
    example = json.loads(EXAMPLE_CUSTOM_TOOL)
    lookup = {"type": "function", "function": {k: example[k] for k in ("name", "description", "parameters")}}
    assert streamed_calls(sim, "Where is my order B-7731?", [*BUILTIN, lookup]) == [
        ("lookup_order", {"order_id": "B-7731"})]
    assert streamed_calls(sim, "What do the docs say about thinking modes?", BUILTIN) == [
        ("search_docs", {"query": "thinking modes"})]


def test_what_the_prompt_does_not_say_gets_plausible_values(sim: SimProcess) -> None:
    ((name, args),) = streamed_calls(sim, "Book a table for four", [*BUILTIN, BOOK_TABLE])
    assert name == "book_table" and args["party"]["size"] == 4
    assert args["restaurant"] and args["party"]["name"] and "phone" not in args["party"]
    assert date.fromisoformat(args["when"]["date"]) and re.fullmatch(r"\d\d:\d\d", args["when"]["time"])


def test_a_comparison_is_answered_correctly(sim: SimProcess) -> None:
    body = {"messages": [{"role": "user", "content": "Is 17 - 5 greater than 3 * 4?"}],
            "chat_template_kwargs": {"thinking_mode": "disabled"}}
    content = chat(sim.url, body).json()["choices"][0]["message"]["content"]
    assert content == "No. 17 - 5 = 12 and 3 × 4 = 12: they are equal, so 17 - 5 is not greater than 3 × 4."


def test_big_integers_are_computed_exactly(sim: SimProcess) -> None:
    body = {"messages": [{"role": "user", "content": "What is 2**100?"}],
            "chat_template_kwargs": {"thinking_mode": "disabled"}}
    assert chat(sim.url, body).json()["choices"][0]["message"]["content"] == str(2**100)


@pytest.fixture(scope="module")
def client(sim: SimProcess) -> Iterator[ChatClient]:
    chat_client = ChatClient(EndpointConfig(base_url=f"{sim.url}/v1", model="MiniMax-M3"))
    yield chat_client
    chat_client.close()


def run_loop(client: ChatClient, question: str) -> tuple[list[Any], LoopFinished]:
    loop = ToolLoop(client, builtin_registry(), GenerationSettings(thinking_mode="disabled"), LoopOptions())
    events = list(loop.run(Conversation().ask(question)))
    assert isinstance(events[-1], LoopFinished) and events[-1].outcome == "answer"
    return events, events[-1]


def test_round_trip_the_app_runs_the_unit_tool_and_the_answer_gives_16_09_km(client: ChatClient) -> None:
    events, done = run_loop(client, "Convert 10 miles to kilometers")
    (result,) = [e.result for e in events if isinstance(e, ToolExecutionFinished)]
    assert not result.is_error and result.content == "10 mi = 16.0934 km"
    assert "16.0934 km" in done.conversation.turns[-1].content


def test_round_trip_the_comparison_is_answered_from_the_calculators_results(client: ChatClient) -> None:
    events, done = run_loop(client, "Is 17 - 5 greater than 3 * 4?")
    assert sorted(e.result.content for e in events if isinstance(e, ToolExecutionFinished)) == [
        "17 - 5 = 12", "3 * 4 = 12"]
    assert done.conversation.turns[-1].content.startswith("No. 17 - 5 = 12 and 3 × 4 = 12: they are equal")


def test_round_trip_the_clock_tool_gets_a_zone_it_knows(client: ChatClient) -> None:
    events, _ = run_loop(client, "What time is it in Tokyo?")
    (result,) = [e.result for e in events if isinstance(e, ToolExecutionFinished)]
    assert not result.is_error and result.content.endswith("in Asia/Tokyo")


def test_every_unit_the_sim_writes_is_one_the_unit_tool_accepts() -> None:
    for symbol, (kind, _) in UNITS.items():
        partner = next(s for s, (k, _) in UNITS.items() if k == kind and s != symbol)
        assert "=" in convert_units(1, symbol, partner)


def test_prompt_values_are_read_as_written() -> None:
    today = date(2026, 12, 1)  # a Tuesday
    assert stated_date("dinner on Friday", today) == date(2026, 12, 4)
    assert stated_date("tomorrow at noon", today) == date(2026, 12, 2) and stated_time("tomorrow at noon") == "12:00"
    assert stated_date("the 3rd of March", today) == date(2027, 3, 3)  # already past this year
    assert (head_count("a party of four"), head_count("table for 2"), head_count("3 guests")) == (4, 2, 3)
    assert person_name("my name is Ana Silva") == "Ana Silva" and phone_number("call (555) 010-0100") == \
        "(555) 010-0100"
    assert find_conversions("10 miles in 2 hours") == [] and find_conversions("Convert 10 kg to km") == []


def test_a_list_of_objects_gets_one_item_per_place_each_under_its_own_place_property() -> None:
    route = ToolSpec("plan_route", "Plan a route.", {"type": "object", "properties": {
        "legs": {"type": "array", "items": {"type": "object", "properties": {
            "location": {"type": "string"}, "hours": {"type": "integer"}}, "required": ["location", "hours"]}},
        "tags": {"type": "array", "items": {"type": "string"}}}, "required": ["legs"]})
    (call,) = plan_calls("Plan a route from Berlin to Prague and Vienna, 3 hours each", (route,))
    assert call.arguments == {"legs": [{"location": "Berlin", "hours": 3}, {"location": "Prague", "hours": 3},
                                     {"location": "Vienna", "hours": 3}]}


@pytest.mark.parametrize("place", ["Tokyo", "New York", "Beijing", "San Francisco", "Rio de Janeiro", "Mumbai"])
def test_places_map_to_real_time_zones(place: str) -> None:
    zone = zone_for(place)
    assert zone is not None and ZoneInfo(zone)
