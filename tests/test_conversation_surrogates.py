"""A lone surrogate ("x \\ud83d y"), typed, loaded or streamed by the engine, is stored, shown and exported with
U+FFFD in its place: nothing in the chat core raises UnicodeEncodeError, and the page gets encodable text."""

from __future__ import annotations

import json

import orjson

from m3ui.chat_session import transcript
from m3ui.client import ChatClient, ContentDelta, EndpointConfig, GenerationSettings, ReasoningDelta, ToolCall
from m3ui.conversation import AssistantTurn, Conversation, ToolTurn, from_json, to_json, to_markdown
from m3ui.conversation.library import new_chat
from m3ui.tools import ToolResult
from m3ui.ui.chat.render import render
from tests.sse_replay import DONE, ReplayServer, SseReply, chunk

LONE = "x \ud83d y"
CLEAN = "x \ufffd y"


def test_typed_text_with_a_lone_surrogate_is_stored_with_a_replacement_character():
    conversation = Conversation(system_prompt=LONE).ask(LONE)
    assert conversation.turns[0].content == CLEAN and conversation.system_prompt == CLEAN


def test_export_never_raises_and_round_trips():
    call = ToolCall.from_json_text(0, "c1", "echo", '{"text": "\\ud83d"}')  # a JSON escape of a lone surrogate
    conversation = Conversation().ask(LONE).add(
        AssistantTurn(LONE, LONE, (call,)), ToolTurn(ToolResult("c1", "echo", LONE)))
    markdown, document = to_markdown(conversation), to_json(conversation)
    assert markdown.encode("utf-8") and document.encode("utf-8")
    assert CLEAN in markdown and from_json(document).turns[0].content == CLEAN


def test_a_chat_loaded_with_an_escaped_lone_surrogate_is_clean():
    document = json.dumps({"format": "m3ui.conversation", "version": 1, "system_prompt": "",
                           "turns": [{"role": "user", "content": LONE}]})  # json.dumps writes "\\ud83d"
    assert from_json(document).turns[0].content == CLEAN


def test_what_the_page_is_sent_is_encodable_even_for_escaped_tool_arguments():
    call = ToolCall.from_json_text(0, "c1", "echo", '{"text": "\\ud83d"}')
    chat = new_chat().with_conversation(Conversation().ask(LONE).add(
        AssistantTurn(LONE, LONE, (call,)), ToolTurn(ToolResult("c1", "echo", LONE))))
    for message in render(transcript(chat)):
        orjson.dumps(message.content)  # what Gradio does; raises on a lone surrogate


def test_streamed_lone_surrogates_arrive_replaced():
    reply = SseReply((chunk(reasoning=LONE), chunk(content=LONE), chunk(finish_reason="stop"), DONE))
    with ReplayServer([reply]) as server:  # chunk() JSON-escapes the surrogate, as an engine would
        events = list(ChatClient(EndpointConfig(base_url=server.base_url)).stream(
            [{"role": "user", "content": "hi"}], GenerationSettings()))
    assert ReasoningDelta(CLEAN) in events and ContentDelta(CLEAN) in events
