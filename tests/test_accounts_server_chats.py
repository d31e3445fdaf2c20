"""Chats kept on the server per user: revisions, a stale save kept as a branch (never dropped, never overwriting),
isolation between users, export and delete-my-data, and many sessions writing at once with nothing lost."""

from __future__ import annotations

import sqlite3
import threading

import pytest

from m3ui.accounts import AccountError, AccountStore
from m3ui.accounts.server_chats import BRANCH_SUFFIX, ServerChats
from m3ui.conversation import Conversation
from m3ui.conversation.library import new_chat


@pytest.fixture
def chats(tmp_path):
    store = AccountStore.open(tmp_path)
    store.add("bob", "bobs-password")
    store.add("carol", "carols-password")
    yield ServerChats(store)
    store.close()


def asked(*questions: str):
    conversation = Conversation()
    for question in questions:
        conversation = conversation.ask(question)
    return new_chat().with_conversation(conversation)


def test_revisions_count_up_and_a_chat_follows_its_user(chats):
    chat = asked("first")
    assert chats.save("bob", chat, 0).revision == 1
    grown = chat.with_conversation(chat.conversation.ask("second"))
    assert chats.save("bob", grown, 1).revision == 2
    loaded = chats.load("BOB", chat.id)
    assert loaded.revision == 2 and loaded.chat.conversation == grown.conversation
    assert [c.id for c in chats.list("bob")] == [chat.id]


def test_a_save_from_an_old_revision_is_kept_as_a_branch(chats):
    chat = asked("shared start")
    chats.save("bob", chat, 0)
    phone = chat.with_conversation(chat.conversation.ask("from the phone"))
    laptop = chat.with_conversation(chat.conversation.ask("from the laptop"))
    assert chats.save("bob", phone, 1).revision == 2
    kept = chats.save("bob", laptop, 1)  # the laptop had not seen the phone's save
    assert kept.branched_from == chat.id and kept.chat.id != chat.id and kept.chat.title.endswith(BRANCH_SUFFIX)
    assert chats.load("bob", chat.id).chat.conversation == phone.conversation, "the newer save is not overwritten"
    assert chats.load("bob", kept.chat.id).chat.conversation == laptop.conversation, "the stale one is not dropped"
    assert len(chats.list("bob")) == 2


def test_another_users_chat_ids_are_refused(chats):
    chat = asked("bob's secret")
    chats.save("bob", chat, 0)
    assert chats.load("carol", chat.id) is None
    assert chats.delete("carol", chat.id) is False
    assert chats.list("carol") == [] and chats.export("carol") == []
    mine = asked("carol's own").__class__(chat.id, "carol's", Conversation().ask("carol's own"))
    assert chats.save("carol", mine, 0).revision == 1, "the same id is carol's own chat"
    assert chats.load("bob", chat.id).chat.conversation == chat.conversation
    assert chats.delete_all("carol") == 1 and chats.load("bob", chat.id) is not None


def test_export_and_delete_my_data(chats):
    for n in range(3):
        chats.save("bob", asked(f"q{n}"), 0)
    exported = chats.export("bob")
    assert len(exported) == 3 and all(r["v"] == 1 and r["hash"] for r in exported)
    assert chats.delete_all("bob") == 3 and chats.list("bob") == []


def test_only_enabled_accounts_keep_chats_here(chats):
    chats.accounts.set_enabled("bob", False)
    for call in (lambda: chats.list("bob"), lambda: chats.save("bob", asked("x"), 0),
                 lambda: chats.load("nobody", "abc")):
        with pytest.raises(AccountError, match="signed-in accounts only"):
            call()


def test_bad_ids_are_refused(chats):
    chat = asked("x").__class__("../../etc", "bad")
    with pytest.raises(AccountError, match="unusable chat id"):
        chats.save("bob", chat, 0)


def test_32_sessions_writing_at_once_store_every_message_exactly_once(tmp_path, chats):
    """Each session adds a question per save to its own chat, through two connections (two app processes)."""
    other = ServerChats(AccountStore.open(tmp_path))
    errors: list[BaseException] = []
    saves = 15

    def session(n: int) -> None:
        target = chats if n % 2 else other
        chat, revision = asked(), 0
        try:
            for m in range(saves):
                chat = chat.with_conversation(chat.conversation.ask(f"s{n}-m{m}"))
                revision = target.save("bob" if n % 3 else "carol", chat, revision).revision
        except (sqlite3.Error, AccountError) as exc:  # pragma: no cover - the failure this test looks for
            errors.append(exc)

    threads = [threading.Thread(target=session, args=(n,)) for n in range(32)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    stored = [turn.content for user in ("bob", "carol") for record in chats.export(user)
              for turn in chats.load(user, record["id"]).chat.conversation.turns]
    expected = [f"s{n}-m{m}" for n in range(32) for m in range(saves)]
    assert sorted(stored) == sorted(expected), "every message once, none lost, none twice"
