"""Saved chats per browser: several conversations, switching, renaming, deleting, and the JSON round trip
through the browser's localStorage (which may hand back anything)."""

from __future__ import annotations

import json

from m3ui.client import StreamStats, ToolCall
from m3ui.conversation import AssistantTurn, Conversation, ToolTurn
from m3ui.conversation_store import (
    DEFAULT_TITLE,
    ChatLibrary,
    ChatNote,
    browser_state_secret,
    export_files,
)
from m3ui.tools import ToolResult

STATS = StreamStats(0.25, 1.5, 40.0, 12, 80, 3.0)


def answered_chat(library: ChatLibrary, question: str = "What is 6*7?"):
    chat = library.active
    conversation = Conversation((), "Be brief.").ask(question).add(
        AssistantTurn("42", "six sevens", (), STATS, "stop"))
    return chat.with_conversation(conversation).add_notes(ChatNote(1, "info", "GPU expert hit rate 60%"))


def test_a_new_chat_is_titled_by_its_first_question():
    library = ChatLibrary.fresh()
    assert library.active.title == DEFAULT_TITLE
    chat = answered_chat(library, "  What is   6*7 and why is it the answer to everything in the galaxy?")
    assert chat.title.startswith("What is 6*7 and why is it") and chat.title.endswith("…")
    assert len(chat.title) == 48


def test_library_survives_the_localstorage_round_trip_with_stats_notes_and_tool_turns():
    library = ChatLibrary.fresh()
    call = ToolCall.from_json_text(0, "call_1", "get_weather", '{"city": "Paris"}')
    chat = answered_chat(library)
    chat = chat.with_conversation(chat.conversation.ask("Weather?").add(
        AssistantTurn("", "", (call,), None, "tool_calls"), ToolTurn(ToolResult("call_1", "get_weather", "sunny"))))
    library = library.put(chat).start_new().rename(library.active_id, "Renamed")
    state = json.loads(json.dumps(library.to_state()))  # what the browser stores and hands back
    back = ChatLibrary.from_state(state)
    assert back == library
    assert back.active.conversation.turns == ()
    restored = next(c for c in back.chats if c.id == chat.id)
    assert restored.title == "Renamed" and restored.conversation.system_prompt == "Be brief."
    assert restored.conversation.turns[1].stats == STATS
    assert restored.notes == (ChatNote(1, "info", "GPU expert hit rate 60%"),)


def test_garbage_from_the_browser_gives_a_fresh_library_and_bad_chats_are_skipped():
    assert len(ChatLibrary.from_state(None).chats) == 1
    assert len(ChatLibrary.from_state("junk").chats) == 1
    assert len(ChatLibrary.from_state({"version": 99, "chats": []}).chats) == 1
    good = ChatLibrary.fresh()
    good = good.put(answered_chat(good))
    state = good.to_state()
    state["chats"].append({"id": "x", "conversation": {"format": "other"}})
    state["chats"].append(17)
    state["active"] = "x"
    back = ChatLibrary.from_state(state)
    assert [c.id for c in back.chats] == [good.active_id] and back.active_id == good.active_id


def test_new_reuses_an_empty_chat_switch_and_delete_keep_one_active():
    library = ChatLibrary.fresh()
    assert library.start_new() is library  # nothing typed yet: no second empty chat
    first = library.active_id
    library = library.put(answered_chat(library))
    library = library.start_new("You are terse.")
    second = library.active_id
    assert second != first and library.active.conversation.system_prompt == "You are terse."
    assert [chat_id for _, chat_id in library.choices()] == [second, first]
    assert library.switch(first).active_id == first
    assert library.switch("no-such-id").active_id == second
    library = library.delete(second)
    assert library.active_id == first
    library = library.delete(first)
    assert len(library.chats) == 1 and library.active.conversation.turns == ()


def test_regenerate_cuts_back_to_the_last_question_and_drops_its_notes():
    library = ChatLibrary.fresh()
    chat = answered_chat(library).add_notes(ChatNote(1, "error", "broke"), ChatNote(0, "error", "kept"))
    cut = chat.before_last_answer()
    assert [type(t).__name__ for t in cut.conversation.turns] == ["UserTurn"]
    assert cut.notes == ()  # notes after the question went with the answer
    assert library.active.before_last_answer() is None


def test_clear_keeps_the_system_prompt():
    chat = answered_chat(ChatLibrary.fresh()).cleared()
    assert chat.conversation == Conversation((), "Be brief.") and chat.notes == ()


def test_export_writes_markdown_and_json_named_after_the_title(tmp_path):
    chat = answered_chat(ChatLibrary.fresh())
    markdown, document = export_files(chat, tmp_path)
    assert markdown.name == "what-is-6-7.md" and document.name == "what-is-6-7.json"
    text = markdown.read_text()
    assert text.startswith("# What is 6*7?") and "six sevens" in text and "42" in text
    assert json.loads(document.read_text())["turns"][1]["content"] == "42"
    renamed = ChatLibrary((chat,), chat.id).rename(chat.id, "Sevens").active
    markdown2, _ = export_files(renamed, tmp_path)
    assert sorted(p.name for p in markdown2.parent.iterdir()) == ["sevens.json", "sevens.md"]


def test_browser_state_secret_is_stable_per_data_folder(tmp_path):
    first = browser_state_secret(tmp_path)
    assert len(first) >= 24 and browser_state_secret(tmp_path) == first
    assert browser_state_secret(tmp_path / "other") != first
