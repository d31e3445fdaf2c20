"""Saved system prompts in real Chromium. With accounts (the app attached to a simulated engine through a proxy
that records what the engine is sent): alice saves a prompt, starts a new chat, picks it and asks; the engine
receives it as the system message, a reload keeps it, a pick in an answered chat opens a new one, and her
default starts New chat with it; bob sees none of hers, and his own of the same name leaves hers as it was.
Without accounts: saved and picked in the browser's storage, still there after a reload, and a prompt another tab
saved is listed as the picker opens."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from m3ui.accounts import AccountStore
from m3ui.accounts.saved_prompts import SavedPrompts
from m3ui.conversation.saved_prompts import PromptBook, SavedPrompt
from tests.app_process import RunningApp, free_port, running_app
from tests.browser import UI_TIMEOUT_MS, browser_contexts, sign_in, wait_engine_ready
from tests.fault_proxy import FaultProxy
from tests.sim_process import running_sim, sim_settings
from tests.test_browser_chat import QUESTIONS, send, start_new_chat, wait_answered, wait_chats_loaded

pytestmark = pytest.mark.browser
ALICE = ("alice", "alices-password")
BOB = ("bob", "bobs-password")
TERSE = "You are terse: answer in one line."
ASKED = "/v1/chat/completions"


@pytest.fixture(scope="module")
def attached(tmp_path_factory) -> Iterator[tuple[RunningApp, FaultProxy]]:
    """The app with accounts for alice and bob, attached to a simulated engine through a recording proxy."""
    folder = tmp_path_factory.mktemp("saved-prompts")
    store = AccountStore.open(folder / "data")
    for person in (ALICE, BOB):
        store.add(*person)
    store.close()
    with running_sim(sim_settings(free_port())) as sim, FaultProxy(sim.url) as proxy, \
            running_app(folder, "--endpoint", proxy.url + "/v1", data_dir=folder / "data") as app:
        yield app, proxy


def box(page) -> str:
    return page.locator("#m3-system-prompt textarea").input_value()


def picked(page) -> str:
    return page.locator("#m3-prompt-pick input").input_value()


def wait_picked(page, name: str) -> None:
    page.wait_for_function("name => document.querySelector('#m3-prompt-pick input').value === name", arg=name)


def wait_box(page, text: str) -> None:
    page.wait_for_function("t => document.querySelector('#m3-system-prompt textarea').value === t", arg=text,
                           timeout=10_000)


def choices(page) -> list[str]:
    page.locator("#m3-prompt-pick input").click()
    options = page.get_by_role("option")
    options.first.wait_for()
    names = [text.split("\n")[-1].strip() for text in options.all_inner_texts()]  # (after the ✓ of the one picked)
    page.locator("#m3-prompt-pick input").blur()  # the list closes
    options.first.wait_for(state="detached")
    return names


def pick(page, name: str) -> None:
    page.locator("#m3-prompt-pick input").click()
    page.get_by_role("option", name=name, exact=True).click()


def save_prompt(page, name: str, text: str) -> None:
    page.locator("#m3-system-prompt textarea").fill(text)
    page.locator("#m3-prompt-name input").fill(name)
    page.click("#m3-prompt-save")
    wait_picked(page, name)


def system_messages(proxy: FaultProxy) -> list[str | None]:
    """The system message of each chat request the engine was sent (None: it had none)."""
    found = []
    for path, body in list(proxy.bodies):
        if path == ASKED:
            messages = json.loads(body)["messages"]
            found.append(messages[0]["content"] if messages[0]["role"] == "system" else None)
    return found


def ready(page) -> None:
    page.set_default_timeout(UI_TIMEOUT_MS)
    wait_engine_ready(page)
    wait_chats_loaded(page)


def test_a_saved_prompt_is_picked_for_a_new_chat_sent_kept_and_never_anothers(attached):
    app, proxy = attached
    with browser_contexts() as browser:
        alice = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
        sign_in(alice, app.url, ALICE)
        ready(alice)
        save_prompt(alice, "Terse", TERSE)
        alice.locator("#m3-system-prompt textarea").fill("")
        wait_picked(alice, "None")  # the box no longer holds a saved prompt
        send(alice, "What is 2 + 2?")
        wait_answered(alice)

        start_new_chat(alice)
        assert box(alice) == ""  # no default yet: New chat starts with the box as it was
        pick(alice, "Terse")
        wait_box(alice, TERSE)
        send(alice, "What is 3 + 4?")
        wait_answered(alice)
        assert system_messages(proxy)[-1] == TERSE, "the engine was sent the picked prompt as the system message"
        assert None in system_messages(proxy), "the first chat was asked without one"

        alice.reload()
        ready(alice)
        wait_box(alice, TERSE)
        wait_picked(alice, "Terse")
        assert choices(alice) == ["None", "Terse"]

        # a pick in a chat already answered opens a new chat: the answered one keeps its system prompt
        alice.locator("#m3-chat-list label", has_text="What is 2 + 2?").wait_for()
        chats = alice.locator("#m3-chat-list label").count()
        pick(alice, "None")
        alice.wait_for_function(f"{QUESTIONS} === 0")
        wait_box(alice, "")
        assert alice.locator("#m3-chat-list label").count() == chats + 1, "a new chat, beside the answered ones"
        alice.locator("#m3-chat-list label", has_text="What is 3 + 4?").click()
        wait_box(alice, TERSE)

        # her default: New chat starts with it
        alice.locator("#m3-prompt-default input").check()
        alice.get_by_text("New chats start with “Terse”").wait_for()
        start_new_chat(alice)
        assert box(alice) == TERSE

        bob = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
        sign_in(bob, app.url, BOB)
        ready(bob)
        bob.wait_for_timeout(1000)  # his prompts have loaded (the picker's choices come with the page's load)
        assert choices(bob) == ["None"], "bob must not see alice's prompts"
        send(bob, "What is 1 + 1?")
        wait_answered(bob)
        start_new_chat(bob)  # (waits for the new chat to show)
        assert box(bob) == "", "alice's default is hers alone"
        save_prompt(bob, "Terse", "bob's own")

    store = AccountStore.open(app.data_dir)
    try:
        prompts = SavedPrompts(store)
        assert prompts.book("alice") == PromptBook((SavedPrompt("Terse", TERSE),), "Terse")
        assert prompts.book("bob") == PromptBook((SavedPrompt("Terse", "bob's own"),))
    finally:
        store.close()


def test_without_accounts_prompts_are_kept_in_the_browser_picked_and_still_there_after_a_reload(page):
    wait_chats_loaded(page)
    save_prompt(page, "Poet", "You answer in verse.")
    save_prompt(page, "Coder", "You write Python.")
    assert choices(page) == ["None", "Coder", "Poet"]
    pick(page, "Poet")
    wait_box(page, "You answer in verse.")
    send(page, "What is 6 * 7?")
    wait_answered(page)
    stored = page.evaluate("JSON.parse(localStorage.getItem('m3ui-saved-prompts'))")
    assert [p["name"] for p in stored["prompts"]] == ["Coder", "Poet"]

    page.reload()
    wait_engine_ready(page)
    wait_chats_loaded(page)
    wait_box(page, "You answer in verse.")
    wait_picked(page, "Poet")
    assert choices(page) == ["None", "Coder", "Poet"]
    page.locator("#m3-prompt-delete").click()
    wait_picked(page, "None")
    assert choices(page) == ["None", "Coder"]
    assert box(page) == "You answer in verse.", "a deleted prompt leaves the chat's system prompt as it was"


def test_the_picker_lists_a_prompt_another_tab_saved_as_it_opens(page):
    wait_chats_loaded(page)
    other = page.context.new_page()
    other.goto(page.url)
    ready(other)
    save_prompt(other, "Haiku", "You answer in haiku.")
    other.close()
    assert choices(page) == ["None", "Haiku"]
    pick(page, "Haiku")
    wait_box(page, "You answer in haiku.")
