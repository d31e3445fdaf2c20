"""The Chat tab's library on the server for signed-in people: two tabs of one person never lose a change (a save
from an old version shows up as a branch), and no Gradio function of the main app, given another person's chat
ids in every input it takes, shows or changes that person's chats."""

from __future__ import annotations

import inspect
from dataclasses import replace

import gradio as gr
import pytest

from m3ui.access import AccessPolicy
from m3ui.accounts import AccountStore
from m3ui.accounts.server_chats import BRANCH_SUFFIX, ServerChats
from m3ui.conversation import Conversation
from m3ui.conversation.library import ChatLibrary, chat_record, new_chat
from m3ui.services import AppServices
from m3ui.ui.account_chats import AccountChats
from m3ui.ui.app_view import build_main_app
from m3ui.ui.chat.controller import ChatController
from tests.every_function import as_user, assert_no_output_holds

SECRET = "bobs-secret-plan"


@pytest.fixture
def app(tmp_path):
    store = AccountStore.open(tmp_path / "data")
    store.add("bob", "bobs-password")
    store.add("carol", "carols-password")
    services = AppServices.create(tmp_path / "data", AccessPolicy.from_env("0.0.0.0", None, accounts=store))
    try:
        yield store, build_main_app(services)
    finally:
        services.close()


def controller(demo: gr.Blocks) -> ChatController:
    handlers = (inspect.unwrap(fn.fn) for fn in demo.fns.values() if fn.fn is not None)  # (keyed: view_slots)
    return next(fn.__self__ for fn in handlers if isinstance(getattr(fn, "__self__", None), ChatController))


def library_of(view: dict[str, object]) -> ChatLibrary:
    return view["library"]


def test_two_tabs_of_one_person_keep_both_versions(app):
    store, demo = app
    chat = controller(demo)
    as_user("bob")
    tab1 = library_of(chat.load(None))
    first = new_chat().with_conversation(Conversation().ask("first question"))
    tab1 = library_of(chat.show(tab1.put(first)))
    tab2 = library_of(chat.load(None))  # a second tab (or device) opens: it sees the chat
    assert [c.conversation.turns[0].content for c in tab2.chats] == ["first question"]
    tab1 = library_of(chat.show(tab1.put(tab1.active.with_conversation(Conversation().ask("tab one's edit")))))
    shown = library_of(chat.show(tab2.put(tab2.active.with_conversation(Conversation().ask("tab two's edit")))))
    texts = sorted(c.conversation.turns[0].content for c in shown.chats)
    assert texts == ["tab one's edit", "tab two's edit"], texts  # the later save is kept beside, not dropped
    assert shown.active.title.endswith(BRANCH_SUFFIX) and shown.active.conversation.turns[0].content == \
        "tab two's edit"
    stored = sorted(r["conversation"]["turns"][0]["content"] for r in ServerChats(store).export("bob"))
    assert stored == ["tab one's edit", "tab two's edit"]
    assert ServerChats(store).export("carol") == []


def test_browser_records_are_not_read_when_signed_in(app):
    _, demo = app
    as_user("bob")
    planted = chat_record(new_chat().with_conversation(Conversation().ask("from the browser")))
    library = library_of(controller(demo).load({"records": [planted]}))
    assert all(not c.conversation.turns for c in library.chats)  # offered for import, not mixed in


def test_no_function_reaches_another_persons_chats(app):
    """Every function of the main app, called as carol with bob's chat ids (and records) in every input."""
    store, demo = app
    chats = ServerChats(store)
    bob_chat = new_chat().with_conversation(Conversation().ask(SECRET))
    chats.save("bob", bob_chat, 0)
    before = chats.export("bob")
    # bob's id and his version's hash, carol's text: anything of SECRET in an output came from bob's chat
    bob_record = {**chat_record(replace(bob_chat, title="carol's", conversation=Conversation().ask("carol's"))),
                  "hash": chat_record(bob_chat)["hash"]}
    values = {"str": bob_chat.id, "dict": {"records": [{**bob_record, "title": "taken"}], "moved": {}},
              "list": [{**bob_record, "deleted": True, "base": bob_record["hash"]}]}
    assert_no_output_holds(demo, "carol", list(values.values()), SECRET)
    assert chats.export("bob") == before
    assert SECRET not in repr(chats.export("carol"))


def test_export_and_delete_my_data_touch_only_ones_own_chats(app):
    store, demo = app
    chats = ServerChats(store)
    chats.save("bob", new_chat().with_conversation(Conversation().ask(SECRET)), 0)
    chats.save("carol", new_chat().with_conversation(Conversation().ask("carol's question")), 0)
    part = next(fn.fn.__self__ for fn in demo.fns.values() if isinstance(getattr(fn.fn, "__self__", None),
                                                                       AccountChats))
    assert SECRET in part.export(gr.Request(username="bob"))["text"]
    carols = part.export(gr.Request(username="carol"))["text"]
    assert "carol's question" in carols and SECRET not in carols
    with pytest.raises(gr.Error, match="Type DELETE"):
        part.delete_all("delete", gr.Request(username="carol"))
    part.delete_all("DELETE", gr.Request(username="carol"))
    assert chats.export("carol") == [] and len(chats.export("bob")) == 1


def test_a_delete_from_an_old_version_keeps_the_newer_one(app):
    store, demo = app
    chat = controller(demo)
    as_user("bob")
    first = new_chat().with_conversation(Conversation().ask("kept question"))
    tab1 = library_of(chat.show(ChatLibrary.fresh().put(first)))
    tab2 = library_of(chat.load(None))
    library_of(chat.show(tab2.put(tab2.active.with_conversation(Conversation().ask("newer on tab two")))))
    shown = library_of(chat.show(tab1.delete(first.id)))  # tab one deletes the version it saw
    assert [c.conversation.turns[0].content for c in shown.chats if c.conversation.turns] == ["newer on tab two"]
    assert ServerChats(store).version("bob", first.id) is not None
    assert not ServerChats(store).delete("bob", first.id, revision=1)  # the stored one is at revision 2
