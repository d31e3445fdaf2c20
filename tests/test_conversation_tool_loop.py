"""The tool loop against a scripted OpenAI-compatible HTTP server: calls run, results go back, the model answers."""

from __future__ import annotations

import threading
import time

from m3ui.client import ChatClient, ContentDelta, EndpointConfig, ForceTool, GenerationSettings
from m3ui.conversation import (
    AssistantTurn,
    Conversation,
    LoopFinished,
    LoopOptions,
    StepStarted,
    ToolExecutionFinished,
    ToolExecutionStarted,
    ToolLoop,
    ToolTurn,
)
from m3ui.tools import ToolRegistry, builtin_registry, tool_from_function
from tests.sse_replay import JsonReply, ReplayServer, SseReply, answer_reply, chunk, tool_calls_reply

QUESTION = Conversation().ask("What's the weather in Paris, and 6*7?")


def run_loop(replies, registry=None, settings=None, **options):
    approve = options.pop("approve", None)
    with ReplayServer(replies) as server:
        registry = builtin_registry() if registry is None else registry
        loop = ToolLoop(ChatClient(EndpointConfig(base_url=server.base_url)), registry,
                        settings or GenerationSettings(thinking_mode="enabled"), LoopOptions(**options), approve)
        events = list(loop.run(QUESTION))
    assert isinstance(events[-1], LoopFinished)
    return events, server.requests


def of_type(events, kind):
    return [event for event in events if isinstance(event, kind)]


def test_parallel_tool_calls_run_and_their_results_reach_the_model_before_the_answer():
    replies = [tool_calls_reply(("get_weather", '{"city": "Paris"}'), ("calculator", '{"expression": "6*7"}')),
               answer_reply("Sunny-ish, and 42.", reasoning="have both")]
    events, requests = run_loop(replies)
    final = events[-1]
    assert final.outcome == "answer" and final.message == "answered after 2 step(s)"
    assert [e.step for e in of_type(events, StepStarted)] == [1, 2]
    assert [e.call.name for e in of_type(events, ToolExecutionStarted)] == ["get_weather", "calculator"]
    results = {e.result.name: e.result for e in of_type(events, ToolExecutionFinished)}
    assert results["calculator"].content == "6*7 = 42" and not results["calculator"].is_error
    assert results["get_weather"].content.startswith("DEMO DATA")
    assert "".join(e.text for e in of_type(events, ContentDelta)) == "Sunny-ish, and 42."

    second = requests[1]["messages"]
    assert second[0] == {"role": "user", "content": QUESTION.turns[0].content}
    assert second[1]["role"] == "assistant" and second[1]["content"] is None
    assert [c["function"] for c in second[1]["tool_calls"]] == [
        {"name": "get_weather", "arguments": '{"city": "Paris"}'},
        {"name": "calculator", "arguments": '{"expression": "6*7"}'},
    ]
    call_ids = [c["id"] for c in second[1]["tool_calls"]]
    assert [(m["role"], m["tool_call_id"]) for m in second[2:]] == [("tool", call_ids[0]), ("tool", call_ids[1])]
    assert second[3]["content"] == "6*7 = 42"

    turns = final.conversation.turns
    assert [type(t) for t in turns] == [type(QUESTION.turns[0]), AssistantTurn, ToolTurn, ToolTurn, AssistantTurn]
    assert turns[-1].content == "Sunny-ish, and 42." and turns[-1].reasoning == "have both"


def test_every_request_of_the_loop_sends_the_thinking_mode_and_the_tools():
    _, requests = run_loop([tool_calls_reply(("calculator", '{"expression": "1+1"}')), answer_reply("2")])
    assert len(requests) == 2
    for body in requests:
        assert body["chat_template_kwargs"] == {"thinking_mode": "enabled"}
        assert body["skip_special_tokens"] is False and body["stream_options"] == {"include_usage": True}
        assert [t["function"]["name"] for t in body["tools"]][:2] == ["get_weather", "calculator"]


def test_unknown_tools_and_bad_arguments_become_errors_the_model_sees():
    replies = [tool_calls_reply(("launch_rockets", '{"count": 3}'), ("calculator", '{"expression": 42}'),
                                ("get_weather", '{"city": "Par')),
               answer_reply("Sorry.")]
    events, requests = run_loop(replies)
    assert events[-1].outcome == "answer"
    tool_messages = [m for m in requests[1]["messages"] if m["role"] == "tool"]
    assert tool_messages[0]["content"].startswith("Error: unknown tool 'launch_rockets'; available tools: get_weather")
    assert tool_messages[1]["content"].startswith("Error: invalid arguments for calculator: arguments.expression: "
                                                  "expected string, got integer")
    assert tool_messages[2]["content"].startswith("Error: arguments are not valid JSON")
    assert requests[1]["messages"][1]["tool_calls"][2]["function"]["arguments"] == "{}"
    assert all(e.result.is_error for e in of_type(events, ToolExecutionFinished))


def test_a_denied_call_is_not_run_and_says_denied_by_user():
    ran = []

    def record(note: str) -> str:
        """Records that it ran."""
        ran.append(note)
        return "done"

    registry = ToolRegistry([tool_from_function(record)])
    asked = []
    replies = [tool_calls_reply(("record", '{"note": "a"}'), ("record", '{"note": "b"}')), answer_reply("ok")]
    events, requests = run_loop(replies, registry,
                                approve=lambda call: asked.append(call.arguments["note"]) or call.arguments == {
                                    "note": "a"})
    assert asked == ["a", "b"] and ran == ["a"]
    contents = [m["content"] for m in requests[1]["messages"] if m["role"] == "tool"]
    assert contents == ["done", "Error: denied by user"]


def test_a_call_that_cannot_run_is_refused_before_the_user_is_asked():
    asked = []
    replies = [tool_calls_reply(("no_such_tool", '{"x": 1}'), ("calculator", '{"expr": "1"}')), answer_reply("ok")]
    events, requests = run_loop(replies, approve=lambda call: asked.append(call.name) or True)
    assert asked == [], "an undeclared tool or invalid arguments must never reach the approval question"
    contents = [m["content"] for m in requests[1]["messages"] if m["role"] == "tool"]
    assert contents[0].startswith("Error: unknown tool 'no_such_tool'")
    assert contents[1].startswith("Error: invalid arguments for calculator")


def test_the_loop_stops_at_the_step_limit_with_a_clear_outcome():
    replies = [tool_calls_reply(("calculator", '{"expression": "1+1"}')) for _ in range(3)]
    events, requests = run_loop(replies, max_steps=2)
    final = events[-1]
    assert final.outcome == "step_limit" and "step limit reached" in final.message and "2 requests" in final.message
    assert len(requests) == 2
    assert isinstance(final.conversation.turns[-1], ToolTurn)


def test_required_and_named_tool_choice_apply_to_the_first_request_only():
    _, requests = run_loop([tool_calls_reply(("calculator", '{"expression": "2"}')), answer_reply("2")],
                           tool_choice="required")
    assert [body["tool_choice"] for body in requests] == ["required", "auto"]
    _, requests = run_loop([tool_calls_reply(("calculator", '{"expression": "2"}')), answer_reply("2")],
                           tool_choice=ForceTool("calculator"))
    assert requests[0]["tool_choice"] == {"type": "function", "function": {"name": "calculator"}}


def test_a_slow_tool_times_out_as_an_error_and_the_loop_goes_on():
    release = threading.Event()

    def stall() -> str:
        """Takes too long."""
        release.wait(5)
        return "late"

    started = time.monotonic()
    events, requests = run_loop([tool_calls_reply(("stall", "{}")), answer_reply("gave up")],
                                ToolRegistry([tool_from_function(stall)]), tool_timeout_s=0.3)
    release.set()
    assert time.monotonic() - started < 2
    assert events[-1].outcome == "answer"
    assert "did not answer within 0.3 s (timed out)" in requests[1]["messages"][2]["content"]


def test_an_engine_error_ends_the_loop_with_the_error_and_without_a_half_turn():
    events, _ = run_loop([tool_calls_reply(("calculator", '{"expression": "1"}')),
                          JsonReply(400, {"object": "error", "message": "context too long", "code": 400})])
    final = events[-1]
    assert (final.outcome, final.error.kind, final.error.status) == ("error", "http", 400)
    assert "context too long" in final.message
    assert isinstance(final.conversation.turns[-1], ToolTurn)


def test_stop_during_a_step_ends_the_loop_as_cancelled_and_keeps_the_partial_answer():
    head = (chunk(content="", role="assistant"), chunk(content="Part"))
    with ReplayServer([SseReply(head, hold_open_s=10)]) as server:
        loop = ToolLoop(ChatClient(EndpointConfig(base_url=server.base_url)), builtin_registry(), GenerationSettings())
        events = []
        for event in loop.run(QUESTION):
            events.append(event)
            if event == ContentDelta("Part"):
                threading.Timer(0.05, loop.stop).start()
        assert server.client_disconnected.wait(2)
    final = events[-1]
    assert final.outcome == "cancelled"
    last = final.conversation.turns[-1]
    assert last == AssistantTurn("Part", stats=last.stats, finish_reason="cancelled", at=last.at)


def test_dropping_the_loop_generator_mid_stream_disconnects_from_the_engine():
    head = (chunk(content="", role="assistant"), chunk(content="Part"))
    with ReplayServer([SseReply(head, hold_open_s=10)]) as server:
        loop = ToolLoop(ChatClient(EndpointConfig(base_url=server.base_url)), builtin_registry(), GenerationSettings())
        events = loop.run(QUESTION)
        assert ContentDelta("Part") in [next(events), next(events)]
        events.close()
        assert server.client_disconnected.wait(2)


def test_without_tools_the_loop_is_a_plain_chat_and_sends_no_tools():
    events, requests = run_loop([answer_reply("Hi there")], ToolRegistry())
    assert events[-1].outcome == "answer" and "tools" not in requests[0]
