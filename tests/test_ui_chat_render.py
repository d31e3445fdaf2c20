"""How a chat is drawn: reasoning in a block that is open while the model thinks and folds away titled with the
thinking time, the answer as its own message with its stats, tool calls with their result nested inside."""

from __future__ import annotations

from m3ui.chat_session import CallView, QuestionView, StepView
from m3ui.client import StreamStats, ToolCall
from m3ui.conversation.library import ChatNote
from m3ui.tools import ToolResult
from m3ui.ui.chat.render import WAITING_TITLE, render

STATS = StreamStats(0.42, 3.14, 38.46, 812, 240, 9.0)


def test_reasoning_streams_in_an_open_block_that_folds_away_titled_with_the_thinking_time():
    thinking = render(live=[StepView(reasoning="Let me see", thinking=True)], running=True)
    (block,) = thinking
    assert block.metadata["status"] == "pending" and block.metadata["title"] == "Thinking…"
    assert block.content == "Let me see"

    answered = render(live=[StepView(reasoning="Let me see", content="42", thinking_s=3.14)], running=True)
    block, answer = answered
    assert block.metadata["status"] == "done" and block.metadata["title"] == "Thought for 3.1 s"
    assert answer.content == "42" and not answer.metadata


def test_a_short_answer_shows_a_dash_for_its_decode_rate():
    short = StreamStats(0.42, None, None, 812, 2, 0.5)
    (answer,) = render([StepView(content="Hi", stats=short)])
    assert "TTFT 0.42 s · — tok/s · 812 → 2 tokens" in answer.content


def test_the_answer_carries_its_stats_line():
    (answer,) = render([StepView(content="Paris.", stats=STATS, remarks=("GPU expert hit rate 61%",))])
    assert answer.content.startswith("Paris.\n\n<div class=\"m3-stats\">")
    assert ("TTFT 0.42 s · thought 3.1 s · 38.5 tok/s · 812 → 240 tokens · GPU expert hit rate 61%"
            in answer.content)


def test_no_thinking_no_block():
    messages = render([QuestionView("hi"), StepView(content="Hello!")])
    assert [(m.role, m.metadata.get("title")) for m in messages] == [("user", None), ("assistant", None)]


def test_a_tool_call_shows_its_arguments_and_nests_its_result():
    call = ToolCall.from_json_text(0, "call_1", "get_weather", '{"city":"Paris"}')
    result = ToolResult("call_1", "get_weather", "sunny, 21 °C", duration_s=0.0123)
    running, result_messages = (render(live=[StepView(calls=(CallView.settled(call, r),))])
                                for r in (None, result))
    (pending,) = render(live=[StepView(calls=(CallView("call_1", "get_weather", '{"ci', "receiving"),))])
    assert pending.metadata["status"] == "pending" and pending.metadata["log"] == "receiving arguments…"
    assert pending.content == '```json\n{"ci\n```'  # shown as it streams

    block, nested = result_messages
    assert block.metadata["title"] == "Tool call: get_weather" and block.metadata["log"] == "done"
    assert "status" not in block.metadata  # settled: stays open, no spinner
    assert block.metadata["duration"] == 0.0123
    assert block.content == '```json\n{\n  "city": "Paris"\n}\n```'
    assert nested.metadata["parent_id"] == block.metadata["id"] and nested.metadata["title"] == "Result"
    assert nested.content == "```\nsunny, 21 °C\n```"
    assert running[0].metadata["log"] == "error"  # no result at all is an error, never "done"


def test_a_tool_call_step_shows_its_token_counts_and_timing_like_an_answer():
    call = ToolCall.from_json_text(0, "call_1", "get_weather", '{"city":"Paris"}')
    result = ToolResult("call_1", "get_weather", "sunny", duration_s=0.01)
    *_, figures = render([StepView(calls=(CallView.settled(call, result),), stats=STATS)])
    assert not figures.metadata and figures.content == (
        '<div class="m3-stats">TTFT 0.42 s · thought 3.1 s · 38.5 tok/s · 812 → 240 tokens</div>')
    with_text = render([StepView(content="Checking.", calls=(CallView.settled(call, result),), stats=STATS)])
    assert [m.content.count("m3-stats") for m in with_text] == [1, 0, 0]  # under its text, once


def test_a_refused_call_shows_the_error_without_a_duration():
    call = ToolCall.from_json_text(0, "call_9", "launch_rockets", "{}")
    refused = ToolResult.error(call, "unknown tool 'launch_rockets'")
    block, nested = render([StepView(calls=(CallView.settled(call, refused),))])
    assert block.metadata["log"] == "error" and "duration" not in block.metadata
    assert nested.metadata["title"] == "Error" and "unknown tool" in nested.content


def test_message_ids_are_unique_across_saved_and_live_steps():
    call = CallView("call_1", "calculator", "{}", "running")
    messages = render([StepView(reasoning="a", calls=(call,))], live=[StepView(reasoning="b", calls=(call,))])
    ids = [m.metadata["id"] for m in messages]
    assert len(ids) == len(set(ids)) == 4


def test_waiting_for_the_first_token_shows_a_pending_block():
    (waiting,) = render([], running=True)
    assert waiting.metadata == {"title": WAITING_TITLE, "status": "pending"}
    assert render([], live=[StepView(content="x")], running=True)[-1].content == "x"


def test_notes_are_messages_that_say_what_happened():
    (note,) = render([ChatNote(0, "error", "The engine failed: HTTP 500: boom.")])
    assert note.role == "assistant" and note.content == "⚠ **Error** — The engine failed: HTTP 500: boom."


def test_code_fences_inside_results_do_not_break_the_block():
    call = ToolCall.from_json_text(0, "c", "search_docs", "{}")
    _, nested = render([StepView(calls=(CallView.settled(call, ToolResult("c", "search_docs", "```x```")),))])
    assert nested.content.startswith("````\n") and nested.content.endswith("\n````")
