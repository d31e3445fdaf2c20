"""Tool schemas come from typed functions; untrusted arguments are checked; every failure is a ToolResult."""

from __future__ import annotations

import threading
import time
from typing import Literal

import pytest

from m3ui.client import ToolCall
from m3ui.tools import (
    CustomToolError,
    ToolRegistry,
    builtin_registry,
    run_tool_calls,
    template_tool,
    template_tool_from_json,
    tool_from_function,
)
from m3ui.tools.validate import schema_errors


def call(name, arguments_json, call_id="call_1", index=0):
    return ToolCall.from_json_text(index, call_id, name, arguments_json)


def book(city: str, nights: int, room: Literal["single", "double"] = "single", tags: list[str] | None = None) -> str:
    """Book a hotel room.

    Longer explanation that is not part of the summary.

    Args:
        city: Where to stay.
        nights: How many nights,
            at least one.
        room: Room type.
    """
    return f"booked {room} in {city} for {nights} nights ({', '.join(tags or [])})"


def test_schema_is_derived_from_signature_and_docstring():
    tool = tool_from_function(book)
    assert tool.name == "book" and tool.description == "Book a hotel room."
    assert tool.parameters == {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "Where to stay."},
            "nights": {"type": "integer", "description": "How many nights, at least one."},
            "room": {"type": "string", "enum": ["single", "double"], "description": "Room type.", "default": "single"},
            "tags": {"type": ["array", "null"], "items": {"type": "string"}, "default": None},
        },
        "required": ["city", "nights"],
        "additionalProperties": False,
    }
    assert tool.to_openai()["type"] == "function"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"nights": 2}, "missing required 'city'"),
        ({"city": "Oslo", "nights": "2"}, "arguments.nights: expected integer, got string"),
        ({"city": "Oslo", "nights": True}, "expected integer, got boolean"),
        ({"city": "Oslo", "nights": 2.5}, "expected integer, got number"),
        ({"city": "Oslo", "nights": 2, "room": "suite"}, "must be one of ['single', 'double']"),
        ({"city": "Oslo", "nights": 2, "pool": True}, "unexpected 'pool'"),
        ({"city": "Oslo", "nights": 2, "tags": ["a", 3]}, "arguments.tags[1]: expected string"),
    ],
)
def test_schema_violations_are_named_precisely(arguments, message):
    errors = schema_errors(tool_from_function(book).parameters, arguments)
    assert any(message in error for error in errors), errors


def test_valid_arguments_have_no_errors():
    assert schema_errors(tool_from_function(book).parameters, {"city": "Oslo", "nights": 2, "tags": None}) == []


@pytest.fixture
def registry():
    def explode(reason: str) -> str:
        """Always fails."""
        raise RuntimeError(f"kaboom: {reason}")

    return ToolRegistry([tool_from_function(book), tool_from_function(explode)])


@pytest.mark.parametrize(
    ("name", "arguments_json", "message"),
    [
        ("book_flight", '{"city": "Oslo"}', "Error: unknown tool 'book_flight'; available tools: book, explode"),
        ("book", '{"city": "Oslo", ', "Error: arguments are not valid JSON"),
        ("book", '["Oslo", 2]', "Error: arguments must be a JSON object"),
        ("book", '{"city": "Oslo", "nights": "two"}', "Error: invalid arguments for book: arguments.nights"),
        ("explode", '{"reason": "testing"}', "Error: explode failed: kaboom: testing"),
    ],
)
def test_bad_calls_become_error_results_the_model_can_read(registry, name, arguments_json, message):
    result = registry.invoke(call(name, arguments_json))
    assert result.is_error and result.content.startswith(message)
    assert (result.call_id, result.name) == ("call_1", name)


def test_a_valid_call_runs_the_function_with_its_defaults(registry):
    result = registry.invoke(call("book", '{"city": "Oslo", "nights": 2}'))
    assert not result.is_error and result.content == "booked single in Oslo for 2 nights ()"
    assert result.to_openai() == {"role": "tool", "tool_call_id": "call_1", "content": result.content}


def test_empty_arguments_count_as_an_empty_object():
    registry = ToolRegistry([tool_from_function(lambda: "pong", name="ping")])
    assert registry.invoke(call("ping", "")).content == "pong"


def test_two_tools_with_one_name_are_refused():
    with pytest.raises(ValueError, match="two tools are named 'book'"):
        ToolRegistry([tool_from_function(book), tool_from_function(book)])


def test_parallel_calls_run_concurrently_and_a_stuck_call_times_out():
    meeting = threading.Barrier(2, timeout=3)
    release = threading.Event()

    def meet(who: str) -> str:
        """Returns only once the other call is running at the same time."""
        meeting.wait()
        return f"{who} met"

    def stuck() -> str:
        """Never returns in time."""
        release.wait(5)
        return "late"

    registry = ToolRegistry([tool_from_function(meet), tool_from_function(stuck)])
    calls = [call("meet", '{"who": "a"}', "a", 0), call("meet", '{"who": "b"}', "b", 1), call("stuck", "{}", "c", 2)]
    started = time.monotonic()
    finished = list(run_tool_calls(registry, calls, timeout_s=1.0))
    elapsed = time.monotonic() - started
    release.set()
    by_position = dict(finished)
    assert [by_position[i].content for i in (0, 1)] == ["a met", "b met"]
    assert by_position[2].is_error and "did not answer within 1 s (timed out)" in by_position[2].content
    assert [position for position, _ in finished][-1] == 2
    assert 1.0 <= elapsed < 2.0


def test_template_tool_fills_in_arguments_without_touching_attributes():
    tool = template_tool(
        "stock_price", "Price of a stock (demo).",
        {"type": "object", "properties": {"symbol": {"type": "string"}, "days": {"type": "integer", "default": 1}},
         "required": ["symbol"]},
        "$symbol traded at 42 USD over ${days} day(s); $$ is a dollar.",
    )
    registry = ToolRegistry([tool])
    result = registry.invoke(call("stock_price", '{"symbol": "{0.__class__} $days"}'))
    assert result.content == "{0.__class__} $days traded at 42 USD over 1 day(s); $ is a dollar."
    assert registry.invoke(call("stock_price", '{"symbol": "X", "extra": 1}')).is_error


@pytest.mark.parametrize(
    ("definition", "message"),
    [
        ('{"name": "t", "parameters": {"type": "object", "properties": {}}, "result_template": "$nope"}',
         "not parameters"),
        ('{"name": "t", "parameters": {"type": "string"}, "result_template": "x"}', '"type": "object"'),
        ('{"name": "bad name!", "parameters": {"type": "object"}, "result_template": "x"}', "tool name"),
        ('{"name": "t", "parameters": {"type": "object"}, "result_template": "$"}', "bad placeholder"),
        ('{"name": "t"}', "lacks parameters, result_template"),
        ("{not json", "not valid JSON"),
        ('{"name": "t", "parameters": {"type": "object", "properties": {"n": {"type": "int"}}}, '
         '"result_template": "x"}', "engine refuses this parameters schema"),
        ('{"name": "t", "parameters": {"type": "object", "properties": {"c": {"required": true}}}, '
         '"result_template": "x"}', r"True is not of type 'array' \(at parameters\['properties'\]\['c'\]"),
    ],
)
def test_bad_custom_tool_definitions_are_refused_with_what_to_fix(definition, message):
    with pytest.raises(CustomToolError, match=message):
        template_tool_from_json(definition)


def test_builtin_tools_are_offered_with_schemas():
    names = [spec["function"]["name"] for spec in builtin_registry().openai_tools()]
    assert names == ["get_weather", "calculator", "convert_units", "current_time", "search_docs"]
