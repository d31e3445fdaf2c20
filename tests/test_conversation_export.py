"""A conversation saved as JSON loads back equal; as Markdown it reads well."""

from __future__ import annotations

import json

import pytest

from m3ui.conversation import ConversationFormatError, from_json, to_json, to_markdown
from tests.test_conversation_messages import weather_chat


def test_json_round_trip_keeps_every_turn_field():
    chat = weather_chat()
    assert from_json(to_json(chat)) == chat


def test_markdown_shows_roles_reasoning_tool_calls_and_results():
    text = to_markdown(weather_chat())
    assert text.startswith("**System:** Be brief.")
    assert text.count("### User") == 2 and text.count("### Assistant") == 2
    assert "<details><summary>Thinking</summary>\n\ngreet back" in text
    assert '**Tool call** `get_weather`\n\n```json\n{"city": "Paris"}\n```' in text
    assert "**Tool result** `get_weather` (0.01 s)\n\n```\nsunny\n```" in text
    assert "*20 tokens in 1.0 s*" in text


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ("not json", "cannot load conversation"),
        (json.dumps({"format": "other", "version": 1, "turns": []}), "not an m3ui.conversation file"),
        (json.dumps({"format": "m3ui.conversation", "version": 1, "turns": [{"role": "robot"}]}), "unknown role"),
        (json.dumps({"format": "m3ui.conversation", "version": 1, "turns": [{"role": "user"}]}), "KeyError"),
    ],
)
def test_loading_something_else_says_what_is_wrong(document, message):
    with pytest.raises(ConversationFormatError, match=message):
        from_json(document)


def test_fenced_blocks_hold_any_backtick_run_verbatim():
    from m3ui.conversation.export import fenced

    for text in ("plain", "a ``` fence", "four ```` and ``` three", "`"):
        block = fenced(text, "json")
        fence = block.split("json", 1)[0]
        assert block == f"{fence}json\n{text}\n{fence}"
        assert fence not in text and len(fence) >= 3
