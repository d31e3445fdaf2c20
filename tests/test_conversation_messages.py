"""Conversation -> OpenAI request messages, and Gradio 6's normalized history -> Conversation."""

from __future__ import annotations

from m3ui.client import StreamStats, ToolCall
from m3ui.conversation import AssistantTurn, Conversation, ToolTurn, UserTurn, conversation_from_gradio
from m3ui.conversation import to_openai_messages as messages
from m3ui.tools import ToolResult

STATS = StreamStats(0.1, 0.5, 30.0, 10, 20, 1.0)
WEATHER = ToolCall.from_json_text(0, "call_aaa", "get_weather", '{"city": "Paris"}')


def weather_chat() -> Conversation:
    return Conversation(
        (
            UserTurn("Hi"),
            AssistantTurn("Hello!", reasoning="greet back", stats=STATS, finish_reason="stop"),
            UserTurn("Weather in Paris?"),
            AssistantTurn("", reasoning="need the tool", tool_calls=(WEATHER,), finish_reason="tool_calls"),
            ToolTurn(ToolResult("call_aaa", "get_weather", "sunny", duration_s=0.01)),
        ),
        system_prompt="Be brief.",
    )


def test_messages_have_exact_openai_shape_for_tool_calls_and_results():
    assert messages(weather_chat()) == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello!"},
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "reasoning_content": "need the tool",
         "tool_calls": [{"id": "call_aaa", "type": "function",
                         "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
        {"role": "tool", "tool_call_id": "call_aaa", "content": "sunny"},
    ]


def test_reasoning_of_earlier_exchanges_is_dropped_but_kept_for_the_answer_in_progress():
    sent = messages(weather_chat())
    assert "reasoning_content" not in sent[2]  # the finished "Hello!" exchange
    assert sent[4]["reasoning_content"] == "need the tool"  # a tool step of the current answer


def test_keep_reasoning_sends_every_turns_reasoning():
    sent = messages(weather_chat(), keep_reasoning=True)
    assert sent[2] == {"role": "assistant", "content": "Hello!", "reasoning_content": "greet back"}


def test_a_call_whose_arguments_were_not_json_goes_back_as_an_empty_object():
    broken = ToolCall.from_json_text(0, "call_bad", "get_weather", '{"city": ')
    chat = Conversation((UserTurn("x"), AssistantTurn(tool_calls=(broken,))))
    assert messages(chat)[1]["tool_calls"][0]["function"]["arguments"] == "{}"


def test_an_empty_assistant_answer_is_sent_as_empty_text_not_null():
    assert messages(Conversation((UserTurn("x"), AssistantTurn())))[1] == {"role": "assistant", "content": ""}


def test_gradio_normalized_history_becomes_turns_and_display_blocks_are_dropped():
    history = [
        {"role": "user", "content": [{"type": "text", "text": "What is 2+2?"}], "metadata": None, "options": []},
        {"role": "assistant", "content": [{"type": "text", "text": "2+2 is..."}],
         "metadata": {"title": "Thinking", "status": "done"}, "options": []},
        {"role": "assistant", "content": [{"type": "text", "text": "get_weather(...)"}],
         "metadata": {"title": "🔧 get_weather", "parent_id": None}},
        {"role": "assistant", "content": [{"type": "text", "text": "4"}], "metadata": {}, "options": []},
        {"role": "user", "content": [{"type": "file", "file": {"path": "/tmp/a.png"}},
                                     {"type": "text", "text": "and this?"}]},
        {"role": "user", "content": [{"type": "file", "file": {"path": "/tmp/b.png"}}]},
        {"role": "assistant", "content": "plain string content"},
    ]
    chat = conversation_from_gradio(history, system_prompt="sys")
    assert chat == Conversation(
        (UserTurn("What is 2+2?"), AssistantTurn("4"), UserTurn("and this?"), AssistantTurn("plain string content")),
        "sys",
    )
    assert messages(chat)[0] == {"role": "system", "content": "sys"}
