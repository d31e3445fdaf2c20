"""Answer versions (issue 26): Regenerate keeps the answer it replaces, ‹ › shows any of them, and they are saved
with the chat's record (the browser's storage and the server's chats both keep records as they are)."""

from __future__ import annotations

from m3ui.conversation import AssistantTurn, Conversation
from m3ui.conversation.library import MAX_VERSIONS, ChatLibrary, ChatNote, chat_from_record, chat_record, new_chat
from tests.sse_replay import ReplayServer, answer_reply
from tests.test_ui_chat_handlers import LIBRARY, SETTINGS, answer, controller, request


def answers(chat) -> list[str]:
    return [turn.content for turn in chat.conversation.turns[1:]]


def test_regenerate_keeps_the_replaced_answer_and_the_arrows_show_either():
    with ReplayServer([answer_reply("first answer"), answer_reply("second answer")]) as server:
        chat = controller(server)
        library = answer(chat, chat.send("Tell me", ChatLibrary.fresh(), *SETTINGS, request()))[-1][LIBRARY]
        assert library.active.versions is None
        final = answer(chat, chat.regenerate(library, *SETTINGS, request()))[-1]
    assert final["versions"]["visible"] is True and final["version_label"] == "**2/2**"
    library = final[LIBRARY]
    assert answers(library.active) == ["second answer"]
    back = chat.previous_version(library)
    assert back["version_label"] == "**1/2**" and answers(back[LIBRARY].active) == ["first answer"]
    again = chat.next_version(back[LIBRARY])
    assert again["version_label"] == "**2/2**" and answers(again[LIBRARY].active) == ["second answer"]
    # saved with the chat: its record brings both back, the one shown first
    (record,) = back["outbox"]
    reloaded = ChatLibrary.from_records([record]).active
    assert answers(reloaded) == ["first answer"] and reloaded.versions.count == 2
    assert answers(reloaded.showing_version(1)) == ["second answer"]


def test_versions_go_with_their_notes_and_are_dropped_once_the_chat_moves_on():
    chat = new_chat().with_conversation(Conversation().ask("q").add(AssistantTurn("cut", finish_reason="length")))
    chat = chat.add_notes(ChatNote(1, "cut", "cut off"))
    regenerated = chat.regenerating()
    regenerated = regenerated.with_conversation(regenerated.conversation.add(AssistantTurn("whole")))
    assert regenerated.notes == () and regenerated.versions.count == 2
    first = regenerated.showing_version(0)
    assert answers(first) == ["cut"] and first.notes == (ChatNote(1, "cut", "cut off"),)
    moved_on = first.with_conversation(first.conversation.ask("next question"))
    assert moved_on.versions is None and answers(moved_on)[0] == "cut"
    assert "versions" not in chat_record(moved_on)


def test_versions_are_bounded_and_unreadable_ones_drop_only_themselves():
    chat = new_chat().with_conversation(Conversation().ask("q").add(AssistantTurn("a0")))
    for n in range(1, MAX_VERSIONS + 5):
        chat = chat.regenerating()
        chat = chat.with_conversation(chat.conversation.add(AssistantTurn(f"a{n}")))
    assert chat.versions.count == MAX_VERSIONS
    record = chat_record(chat)
    broken = {**record, "versions": {"question": 7, "shown": 0, "others": "x"}}
    read = chat_from_record(broken)
    assert read is not None and read.versions is None and answers(read) == answers(chat)
