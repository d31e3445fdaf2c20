"""Where the Tools tab keeps its tool chat. Under accounts: on the server among the person's chats (real SQLite),
readable by them only, part of their export and delete-my-data, a save from an out-of-date version kept as a
branch (nothing lost). Without accounts: the browser's record, only for the person it was kept for."""

from __future__ import annotations

import gradio as gr
import pytest

from m3ui.accounts import AccountStore
from m3ui.accounts.server_chats import BRANCH_SUFFIX, ServerChats
from m3ui.conversation import AssistantTurn
from m3ui.conversation.library import SavedChat
from m3ui.ui.tools.keeping import TOOL_CHAT_ID, BrowserKeeper, ServerKeeper, new_tool_chat


@pytest.fixture
def chats(tmp_path):
    store = AccountStore.open(tmp_path / "data")
    store.add("bob", "bobs-password")
    store.add("carol", "carols-password")
    try:
        yield ServerChats(store)
    finally:
        store.close()


def asked(chat: SavedChat, text: str) -> SavedChat:
    return chat.with_conversation(chat.conversation.ask(text))


def questions(chat: SavedChat | None) -> list[str]:
    return [turn.content for turn in chat.conversation.turns] if chat is not None else []


def test_a_tool_chat_kept_on_the_server_comes_back_to_its_person_only(chats):
    keeper = ServerKeeper(chats)
    kept = keeper.kept(new_tool_chat(), asked(new_tool_chat(), "Bob's weather question"), "bob")
    assert kept.saved == gr.skip()  # nothing for the browser to write
    assert questions(keeper.restored(None, "bob")) == ["Bob's weather question"]
    assert keeper.restored(None, "carol") is None
    assert [record["id"] for record in chats.export("bob")] == [TOOL_CHAT_ID]  # in Bob's export
    assert chats.export("carol") == []


def test_what_the_browser_sends_is_not_read_under_accounts(chats):
    planted = BrowserKeeper().kept(new_tool_chat(), asked(new_tool_chat(), "planted"), "carol").saved
    assert ServerKeeper(chats).restored(planted, "carol") is None


def test_a_restored_chat_saved_again_is_written_over_not_branched(chats):
    keeper = ServerKeeper(chats)
    keeper.kept(new_tool_chat(), asked(new_tool_chat(), "first"), "bob")
    restored = keeper.restored(None, "bob")
    assert restored is not None
    second = keeper.kept(restored, asked(restored, "second"), "bob", answer=True).chat
    assert second.id == TOOL_CHAT_ID and len(chats.export("bob")) == 1
    assert questions(keeper.restored(None, "bob")) == ["first", "second"]


def test_a_save_from_an_out_of_date_page_is_kept_as_a_branch_which_the_page_carries_on_with(chats):
    keeper = ServerKeeper(chats)
    opened = keeper.kept(new_tool_chat(), asked(new_tool_chat(), "start"), "bob").chat
    keeper.kept(opened, asked(opened, "from the laptop"), "bob")
    branch = keeper.kept(opened, asked(opened, "from the phone"), "bob").chat  # the phone saw the older version
    assert branch.id != TOOL_CHAT_ID and branch.title.endswith(BRANCH_SUFFIX)
    assert questions(keeper.restored(None, "bob")) == ["start", "from the laptop"]
    later = keeper.kept(branch, asked(branch, "phone again"), "bob").chat
    assert later.id == branch.id and len(chats.export("bob")) == 2
    assert questions(chats.load("bob", branch.id).chat) == ["start", "from the phone", "phone again"]


def test_clear_deletes_the_stored_chat_unless_it_changed_elsewhere(chats):
    keeper = ServerKeeper(chats)
    opened = keeper.kept(new_tool_chat(), asked(new_tool_chat(), "start"), "bob").chat
    newer = keeper.kept(opened, asked(opened, "newer elsewhere"), "bob").chat
    fresh = keeper.cleared(opened, "bob").chat  # this page saw "start" only: the newer one stays
    assert fresh.id == TOOL_CHAT_ID and not fresh.conversation.turns and fresh.title == "New chat"
    assert questions(keeper.restored(None, "bob")) == ["start", "newer elsewhere"]
    keeper.cleared(newer, "bob")
    assert keeper.restored(None, "bob") is None and chats.export("bob") == []


def test_delete_my_data_takes_the_tool_chat_too(chats):
    keeper = ServerKeeper(chats)
    keeper.kept(new_tool_chat(), asked(new_tool_chat(), "weather"), "bob")
    assert chats.delete_all("bob") == 1 and keeper.restored(None, "bob") is None


def test_without_a_login_or_with_a_disabled_account_nothing_is_kept_and_the_error_says_why(chats):
    keeper = ServerKeeper(chats)
    with pytest.raises(gr.Error, match="sign in again"):
        keeper.kept(new_tool_chat(), asked(new_tool_chat(), "anyone?"), None)
    chats.accounts.set_enabled("carol", False)
    with pytest.raises(gr.Error, match="signed-in accounts only"):
        keeper.kept(new_tool_chat(), asked(new_tool_chat(), "disabled"), "carol")
    assert chats.accounts.get("carol") is not None


def test_an_answer_that_ends_after_its_account_was_disabled_is_still_kept(chats):
    keeper = ServerKeeper(chats)
    opened = keeper.kept(new_tool_chat(), asked(new_tool_chat(), "question"), "carol").chat
    chats.accounts.set_enabled("carol", False)
    answered = opened.with_conversation(opened.conversation.add(AssistantTurn("the answer")))
    keeper.kept(opened, answered, "carol", answer=True)
    chats.accounts.set_enabled("carol", True)
    assert len(keeper.restored(None, "carol").conversation.turns) == 2


def test_in_the_browser_a_chat_comes_back_only_for_the_person_it_was_kept_for():
    keeper = BrowserKeeper()
    saved = keeper.kept(new_tool_chat(), asked(new_tool_chat(), "mine"), "bob").saved
    assert questions(keeper.restored(saved, "bob")) == ["mine"]
    assert keeper.restored(saved, "carol") is None and keeper.restored(saved, None) is None
    assert keeper.restored({"user": "bob", "chat": "junk"}, "bob") is None
    assert not keeper.cleared(new_tool_chat(), "bob").chat.conversation.turns
