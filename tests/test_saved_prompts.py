"""Saved system prompts: the book's rules (names, bounds, duplicates, the default, what a browser sends back),
their store in the accounts database, per person (add, list, replace, delete, kept across a reopen, one person's
never another's), how a chat starts with one, and no function of the app reaching another person's."""

from __future__ import annotations

import threading

import pytest

from m3ui.access import AccessPolicy
from m3ui.accounts import AccountError, AccountStore
from m3ui.accounts.saved_prompts import SavedPrompts
from m3ui.conversation import Conversation
from m3ui.conversation.library import ChatLibrary
from m3ui.conversation.saved_prompts import (
    MAX_NAME_CHARS,
    MAX_PROMPTS,
    MAX_TEXT_CHARS,
    PromptBook,
    PromptError,
    SavedPrompt,
)
from m3ui.services import AppServices
from m3ui.ui.app_view import build_main_app
from tests.every_function import assert_no_output_holds

SECRET = "bobs-secret-prompt"


@pytest.fixture
def store(tmp_path):
    accounts = AccountStore.open(tmp_path)
    accounts.add("bob", "bobs-password")
    accounts.add("carol", "carols-password")
    yield SavedPrompts(accounts)
    accounts.close()


def save(name: str, text: str, replacing: str | None = None):
    return lambda book: book.saved(name, text, replacing)


# --- the book's rules


def test_prompts_are_kept_by_name_in_name_order_and_the_text_trimmed():
    book = PromptBook().saved("  Reviewer  ", "  Review the code.\n").saved("coder", "You write code.")
    assert book.prompts == (SavedPrompt("coder", "You write code."), SavedPrompt("Reviewer", "Review the code."))
    assert book.get("REVIEWER").text == "Review the code." and book.names() == ["coder", "Reviewer"]


@pytest.mark.parametrize(("name", "text", "says"), [
    ("", "text", "Give the prompt a name"),
    ("   ", "text", "Give the prompt a name"),
    ("x" * (MAX_NAME_CHARS + 1), "text", f"at most {MAX_NAME_CHARS} printable"),
    ("bell\x07", "text", "printable"),
    ("none", "text", "stands for no saved prompt"),
    ("Coder", "   ", "The system prompt box is empty"),
    ("Coder", "x" * (MAX_TEXT_CHARS + 1), f"at most {MAX_TEXT_CHARS:,} characters"),
])
def test_bad_input_is_refused_with_what_to_fix(name, text, says):
    with pytest.raises(PromptError, match=says):
        PromptBook().saved(name, text)


def test_a_name_taken_is_refused_unless_its_prompt_is_the_one_being_replaced():
    book = PromptBook().saved("Coder", "old")
    with pytest.raises(PromptError, match="You have a prompt named “Coder” already"):
        book.saved("coder", "new")
    with pytest.raises(PromptError, match="already"):
        book.saved("Coder", "new", replacing="Other")
    replaced = book.saved("CODER", "new", replacing="coder")
    assert replaced.prompts == (SavedPrompt("CODER", "new"),)


def test_the_count_is_bounded_but_a_full_book_may_still_replace():
    book = PromptBook()
    for n in range(MAX_PROMPTS):
        book = book.saved(f"p{n}", "text")
    with pytest.raises(PromptError, match=f"At most {MAX_PROMPTS} prompts"):
        book.saved("one more", "text")
    assert book.saved("p0", "changed", replacing="p0").get("p0").text == "changed"


def test_the_default_follows_a_replace_and_goes_with_a_delete():
    book = PromptBook().saved("Coder", "a").saved("Poet", "b").with_default("coder")
    assert book.default == "Coder" and book.default_text == "a"
    book = book.saved("coder", "c", replacing="Coder")
    assert book.default == "coder" and book.default_text == "c"
    assert book.without("Poet").default == "coder"
    assert book.without("CODER").default is None and book.with_default(None).default_text is None


def test_deleting_or_defaulting_an_unknown_prompt_is_refused():
    book = PromptBook().saved("Coder", "a")
    for change in (lambda: book.without("Poet"), lambda: book.with_default("Poet")):
        with pytest.raises(PromptError, match="You have no saved prompt named “Poet”"):
            change()


def test_a_browsers_record_comes_back_with_only_what_is_readable_and_bounded():
    record = {"prompts": [{"name": "Coder", "text": "a"}, {"name": "coder", "text": "dup"}, "junk",
                          {"name": "", "text": "no name"}, {"name": "Long", "text": "x" * (MAX_TEXT_CHARS + 1)},
                          {"name": "Poet", "text": "b"}], "default": "POET"}
    book = PromptBook.from_record(record)
    assert book == PromptBook((SavedPrompt("Coder", "a"), SavedPrompt("Poet", "b")), "Poet")
    assert PromptBook.from_record(book.record()) == book
    assert PromptBook.from_record({"prompts": [], "default": "Gone"}) == PromptBook()
    assert PromptBook.from_record("not a book") == PromptBook() == PromptBook.from_record(None)


# --- the store, per person


def test_add_list_replace_and_delete_are_kept_in_the_database(store, tmp_path):
    store.change("bob", save("Coder", "You write code."))
    store.change("bob", save("Poet", "You write poems."))
    store.change("bob", lambda book: book.with_default("Poet"))
    store.change("bob", save("coder", "You review code.", replacing="Coder"))
    store.change("bob", lambda book: book.without("poet"))
    again = SavedPrompts(AccountStore.open(tmp_path))  # another process's view of the same file
    assert again.book("BOB") == PromptBook((SavedPrompt("coder", "You review code."),), None)
    store.change("bob", lambda book: book.with_default("Coder"))
    assert again.book("bob").default == "coder" and again.book("bob").default_text == "You review code."


def test_a_name_whose_case_changes_beyond_ascii_stays_one_prompt(store):
    """SQLite's NOCASE folds ASCII only: "Ärztin" written as "ärztin" must replace the row, not add one."""
    store.change("bob", save("Ärztin", "You answer as a doctor."))
    store.change("bob", save("ärztin", "You answer as a nurse.", replacing="Ärztin"))
    assert store.book("bob") == PromptBook((SavedPrompt("ärztin", "You answer as a nurse."),))


def test_a_refused_change_changes_nothing(store):
    store.change("bob", save("Coder", "a"))
    with pytest.raises(PromptError, match="already"):
        store.change("bob", lambda book: book.without("Coder").saved("Poet", "b").saved("poet", "c"))
    assert store.book("bob") == PromptBook((SavedPrompt("Coder", "a"),))


def test_one_persons_prompts_are_never_anothers(store):
    store.change("bob", save("Coder", "bob's"))
    store.change("bob", lambda book: book.with_default("Coder"))
    assert store.book("carol") == PromptBook()
    with pytest.raises(PromptError, match="no saved prompt named"):
        store.change("carol", lambda book: book.without("Coder"))
    store.change("carol", save("Coder", "carol's"))  # the same name is a prompt of her own
    store.change("carol", lambda book: book.without("Coder"))
    assert store.book("bob") == PromptBook((SavedPrompt("Coder", "bob's"),), "Coder")


def test_only_enabled_accounts_keep_prompts(store):
    with pytest.raises(AccountError, match="signed-in accounts only"):
        store.book("nobody")
    store.accounts.set_enabled("bob", False)
    with pytest.raises(AccountError, match="signed-in accounts only"):
        store.change("bob", save("Coder", "a"))


def test_tabs_saving_at_once_never_pass_the_count(store):
    store.change("bob", lambda book: _filled(book, MAX_PROMPTS - 5))
    refused: list[Exception] = []

    def add(n: int) -> None:
        try:
            store.change("bob", save(f"tab {n}", "text"))
        except PromptError as exc:
            refused.append(exc)

    threads = [threading.Thread(target=add, args=(n,)) for n in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(store.book("bob").prompts) == MAX_PROMPTS and len(refused) == 7


def _filled(book: PromptBook, count: int) -> PromptBook:
    for n in range(count):
        book = book.saved(f"p{n}", "text")
    return book


# --- a chat starts with the prompt picked


def test_a_chat_still_empty_takes_the_prompt_and_an_answered_one_keeps_its_own():
    library = ChatLibrary.fresh()
    empty = library.active_id
    library = library.start_new("You are terse.")
    assert library.active_id == empty and len(library.chats) == 1
    assert library.active.conversation.system_prompt == "You are terse."
    answered = library.active.with_conversation(Conversation((), "You are terse.").ask("hi"))
    library = library.put(answered).start_new("You are a poet.")
    assert library.active_id != empty and library.active.conversation.system_prompt == "You are a poet."
    assert next(c for c in library.chats if c.id == empty).conversation.system_prompt == "You are terse."


# --- every function of the app, as another person


def test_no_function_of_the_app_shows_or_changes_another_persons_prompts(tmp_path):
    """Every function of the main app, called as carol with bob's prompt's name (and a book naming it) in every
    input: the person is the request's login, never a value the page sends."""
    accounts = AccountStore.open(tmp_path / "data")
    accounts.add("bob", "bobs-password")
    accounts.add("carol", "carols-password")
    services = AppServices.create(tmp_path / "data", AccessPolicy.from_env("0.0.0.0", None, accounts=accounts))
    try:
        demo = build_main_app(services)
        prompts = SavedPrompts(accounts)
        prompts.change("bob", lambda book: book.saved("Plan", SECRET).with_default("Plan"))
        before = prompts.book("bob")
        values = {"str": "Plan", "bool": True,
                  "dict": {"prompts": [{"name": "Plan", "text": "carol's"}], "default": "Plan"}}
        assert_no_output_holds(demo, "carol", list(values.values()), SECRET)
        assert prompts.book("bob") == before
        assert SECRET not in repr(prompts.book("carol"))
    finally:
        services.close()
