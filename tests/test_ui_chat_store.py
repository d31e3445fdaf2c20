"""Saved chats per browser: several conversations, switching, renaming, deleting with undo, search, titles,
and the per-chat records the browser's localStorage holds (which may hand back anything)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from m3ui.client import StreamStats, ToolCall
from m3ui.conversation import AssistantTurn, Conversation, ToolTurn
from m3ui.conversation.library import (
    DEFAULT_TITLE,
    EXPORT_MAX_CHARS,
    ChatLibrary,
    ChatNote,
    chat_from_record,
    chat_record,
    export_documents,
    new_chat,
    title_from,
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
    assert len(chat.title) == 40


def records_of(library: ChatLibrary) -> list[dict]:
    """What the browser holds after writing the library's outbox (into an empty storage)."""
    writes, _ = library.outbox()
    return json.loads(json.dumps([{k: v for k, v in w.items() if k != "base"} for w in writes if not w.get("deleted")]))


def test_library_survives_the_localstorage_round_trip_with_stats_notes_and_tool_turns():
    library = ChatLibrary.fresh()
    call = ToolCall.from_json_text(0, "call_1", "get_weather", '{"city": "Paris"}')
    chat = answered_chat(library)
    chat = chat.with_conversation(chat.conversation.ask("Weather?").add(
        AssistantTurn("", "", (call,), None, "tool_calls"), ToolTurn(ToolResult("call_1", "get_weather", "sunny"))))
    library = library.put(chat).start_new().rename(library.active_id, "Renamed")
    back = ChatLibrary.from_records(records_of(library))
    assert back.chats == library.chats[1:]  # the new empty chat is not stored until something is in it
    restored = next(c for c in back.chats if c.id == chat.id)
    assert restored.title == "Renamed" and restored.conversation.system_prompt == "Be brief."
    assert restored.conversation.turns[1].stats == STATS
    assert restored.notes == (ChatNote(1, "info", "GPU expert hit rate 60%"),)


def test_garbage_from_the_browser_gives_a_fresh_library_and_bad_records_are_skipped():
    assert len(ChatLibrary.from_records(None).chats) == 1
    assert len(ChatLibrary.from_records("junk").chats) == 1
    good = ChatLibrary.fresh()
    good = good.put(answered_chat(good))
    records = records_of(good)
    bad = [{**records[0], "id": "x", "conversation": {"format": "other"}}, 17, {**records[0], "v": 99, "id": "y"},
           {**records[0], "id": "z", "hash": None}]
    back = ChatLibrary.from_records(bad + records, active_id="x")
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


def test_export_is_built_in_memory_named_after_the_title_and_bounded():
    chat = answered_chat(ChatLibrary.fresh())
    documents = export_documents(chat)
    assert documents["md"]["name"] == "what-is-6-7.md" and documents["json"]["name"] == "what-is-6-7.json"
    text = documents["md"]["text"]
    assert text.startswith("# What is 6*7?") and "six sevens" in text and "42" in text
    assert json.loads(documents["json"]["text"])["turns"][1]["content"] == "42"
    huge = chat.with_conversation(chat.conversation.ask("x" * (EXPORT_MAX_CHARS + 1)))
    with pytest.raises(ValueError, match="too long to export"):
        export_documents(huge)


def test_outbox_writes_only_changes_each_over_the_version_it_replaces_and_deletions_as_tombstones():
    library = ChatLibrary.fresh()
    assert library.outbox()[0] == []  # an empty new chat is not stored
    library = library.put(answered_chat(library))
    (first,), library = library.outbox()
    assert first["base"] is None and library.stored == {first["id"]: first["hash"]}
    assert library.outbox()[0] == []  # nothing changed: nothing to write
    library = library.rename(first["id"], "Sevens")
    (renamed,), library = library.outbox()
    assert renamed["base"] == first["hash"] and renamed["hash"] != first["hash"] and renamed["title"] == "Sevens"
    library = library.delete(first["id"])
    (gone,), library = library.outbox()
    assert gone == {"id": first["id"], "deleted": True, "base": renamed["hash"]} and library.stored == {}


def test_sync_takes_the_browsers_chats_and_keeps_this_pages_unsaved_chat_undo_and_search():
    mine = ChatLibrary.fresh()
    mine = mine.put(answered_chat(mine, "mine"))
    _, mine = mine.outbox()
    other = ChatLibrary.fresh()
    other = other.put(answered_chat(other, "theirs"))
    mine = replace(mine.start_new().delete(mine.chats[0].id).undone().start_new(), query="")
    unsaved = mine.active
    synced = mine.synced(records_of(other) + records_of(ChatLibrary((mine.chats[1],), mine.chats[1].id)))
    assert {c.title for c in synced.chats} == {"mine", "theirs", DEFAULT_TITLE}
    assert synced.active_id == unsaved.id
    moved = mine.synced(records_of(other), {unsaved.id: other.active_id})
    assert moved.active_id == other.active_id


def test_titles_are_short_plain_text():
    assert title_from("```python\nprint(1)\n```\nWhy does **this** fail?") == "Why does this fail?"
    assert title_from("# Plan a [trip](http://x.example) to `Oslo`") == "Plan a trip to Oslo"
    assert title_from("- item one\n- item two") == "item one item two"
    assert len(title_from("word " * 40)) == 40


def test_titles_give_math_as_text_and_leave_prices_and_table_rules_out():
    assert title_from("**Solve** $\\frac{1}{2} + x^2$ please") == "Solve 1/2 + x^2 please"
    assert title_from("What is \\(\\sqrt{2}\\)?") == "What is √(2) ?"
    assert title_from("$$\\int_0^1 x\\,dx$$ = ?") == "∫_0^1 x dx = ?"
    assert title_from("It costs $5 and $10") == "It costs $5 and $10"  # money, not math
    assert title_from("| a | b |\n|---|:--:|\n| 1 | 2 |") == "a b 1 2"


def test_search_matches_titles_and_text_case_insensitively():
    library = ChatLibrary.fresh()
    library = library.put(answered_chat(library, "Trip to Oslo"))
    library = library.start_new().put(answered_chat(library.start_new(), "Sourdough"))
    assert [t for t, _ in replace(library, query="oslo").choices()] == ["Trip to Oslo"]
    assert [t for t, _ in replace(library, query="SIX SEVENS").choices()] == []  # reasoning is not searched
    assert len(replace(library, query="42").choices()) == 2  # the answers' text is


def test_edit_retry_and_remove_one_exchange_keep_notes_in_place():
    library = ChatLibrary.fresh()
    chat = answered_chat(library, "one")
    chat = chat.with_conversation(chat.conversation.ask("two").add(AssistantTurn("2")).ask("three").add(
        AssistantTurn("3"))).add_notes(ChatNote(5, "stopped", "late"))
    assert chat.user_turn_index(1) == 2 and chat.user_turn_index(3) is None
    edited = chat.edited(2, "TWO")
    assert [t.content for t in edited.conversation.turns] == ["one", "42", "TWO"] and len(edited.notes) == 1
    assert [t.content for t in chat.retried(2).conversation.turns] == ["one", "42", "two"]
    removed = chat.without_exchange(2)
    assert [t.content for t in removed.conversation.turns] == ["one", "42", "three", "3"]
    assert removed.notes == (ChatNote(1, "info", "GPU expert hit rate 60%"), ChatNote(3, "stopped", "late"))


def test_delete_clear_and_edits_can_be_undone():
    library = ChatLibrary.fresh()
    chat = answered_chat(library)
    library = library.put(chat).delete(chat.id)
    assert chat.id not in [c.id for c in library.chats] and library.undo.label == "deleted “What is 6*7?”"
    library = library.undone()
    assert library.active == chat and library.undo is None
    library = library.put_undoable(chat.cleared(), "cleared")
    assert library.active.conversation.turns == () and library.undone().active == chat


def test_a_chats_settings_come_back_from_the_browser_with_the_same_record_hash():
    chat = new_chat().with_conversation(Conversation().ask("hi")).with_settings(
        {"thinking_mode": "enabled", "temperature": 1.0, "top_p": 0.95, "max_tokens": 4096, "stall_seconds": 60.0,
         "keep_reasoning": False, "unknown": 1})
    record = chat_record(chat)
    # JavaScript writes 1.0 as 1: the record read back must hash the same, or every read would look like a change
    as_stored = json.loads(json.dumps(record).replace(": 1.0,", ": 1,").replace(": 60.0,", ": 60,"))
    assert as_stored["settings"]["temperature"] == 1 and isinstance(as_stored["settings"]["temperature"], int)
    back = chat_from_record(as_stored)
    assert back is not None and chat_record(back)["hash"] == record["hash"]
    assert back.settings == {"thinking_mode": "enabled", "temperature": 1.0, "top_p": 0.95, "max_tokens": 4096,
                             "stall_seconds": 60.0, "keep_reasoning": False}
    assert chat_from_record({**record, "settings": {"max_tokens": 1.5, "temperature": True}}).settings == {}
