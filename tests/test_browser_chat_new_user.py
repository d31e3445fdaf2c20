"""The Chat tab as a new user finds it, in real Chromium against `python app.py` on the simulated engine: Regenerate
while an answer streams says once to stop first; a search with no match says so; a chat's title is plain text;
the thinking mode and generation settings are kept per chat and across a reload; a clicked message is
highlighted and its bar says that the later turns are replaced; a tab opened empty soon sees a chat made in
another tab."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from m3ui.conversation import AssistantTurn, Conversation
from m3ui.conversation.library import chat_record, new_chat
from tests.browser import chromium_page
from tests.test_browser_chat import ask, open_chat, send, start_new_chat, wait_answered

pytestmark = pytest.mark.browser
SAID = """() => [...document.querySelectorAll('.toast-body')].map(e => e.innerText)
  .concat([...document.querySelectorAll('#m3-queued')].filter(e => !e.hidden).map(e => e.innerText))"""


@pytest.fixture
def page(app):
    with chromium_page((1440, 900)) as page:
        open_chat(page, app.url)
        yield page


def test_regenerate_while_an_answer_streams_says_once_to_stop_first(page):
    ask(page, "What is 2 + 2?")
    send(page, "Count to 20000", thinking="Disabled")
    page.wait_for_selector("#m3-stop", state="visible")
    # Right away: the answer's first full frame disables the button (a disabled button says enough by itself).
    enabled = page.locator("#m3-regenerate").is_enabled()
    page.click("#m3-regenerate", force=True)
    page.wait_for_timeout(1500)  # a toast comes with the handler's reply
    said = page.evaluate(SAID)
    assert len(said) == (1 if enabled else 0), said
    assert all("stop it first" in text and text.count("streaming") == 1 for text in said), said  # no repeats
    assert page.is_visible("#m3-stop")  # the answer goes on
    page.keyboard.press("Escape")
    wait_answered(page)
    assert page.inner_text("#m3-chatbot").count("Count to 20000") == 1


def test_a_search_with_no_match_says_so_and_clearing_it_brings_the_chats_back(page):
    ask(page, "Searchable: what is 3 + 3?")
    page.fill("#m3-chat-search textarea, #m3-chat-search input", "no chat has this text")
    chats = page.locator("#m3-chat-list")
    expect(chats).to_contain_text("No chat matches “no chat has this text”")
    assert chats.locator("label").count() == 0
    page.fill("#m3-chat-search textarea, #m3-chat-search input", "")
    expect(chats.locator("label", has_text="Searchable: what is 3 + 3?")).to_be_visible()
    assert "No chat matches" not in chats.inner_text()


def test_a_chats_title_is_its_first_message_as_plain_text(page):
    ask(page, "**Solve** $\\frac{1}{2} + x^2$ for `x`")
    expect(page.locator("#m3-chat-list label").first).to_have_text("Solve 1/2 + x^2 for x")
    assert page.input_value("#m3-chat-title input, #m3-chat-title textarea") == "Solve 1/2 + x^2 for x"


def chosen_settings(page) -> tuple[str, str]:
    """The thinking mode chosen and the max tokens, as the form shows them."""
    modes = page.locator(".m3-thinking-mode")
    return next(name for name in ("Adaptive", "Enabled", "Disabled")
                if modes.get_by_label(name, exact=True).is_checked()), page.input_value("#m3-max-tokens input")


def open_chat_titled(page, title: str) -> None:
    page.locator("#m3-chat-list").get_by_text(title, exact=True).click()
    expect(page.locator("#m3-chat-title textarea, #m3-chat-title input")).to_have_value(title)


def test_each_chat_keeps_its_thinking_mode_and_settings_also_across_a_reload(page, app):
    page.fill("#m3-max-tokens input", "900")
    ask_with(page, "Kept: what is 2 + 2?", "Enabled")
    start_new_chat(page)
    page.fill("#m3-max-tokens input", "700")
    ask_with(page, "Other: what is 3 + 3?", "Disabled")
    open_chat_titled(page, "Kept: what is 2 + 2?")
    expect(page.locator("#m3-max-tokens input")).to_have_value("900")
    assert chosen_settings(page) == ("Enabled", "900")
    open_chat(page, app.url)  # a reload
    kept = {"Other: what is 3 + 3?": ("Disabled", "700"), "Kept: what is 2 + 2?": ("Enabled", "900")}
    for title, settings in kept.items():
        open_chat_titled(page, title)
        expect(page.locator("#m3-max-tokens input")).to_have_value(settings[1])
        assert chosen_settings(page) == settings, title


def ask_with(page, text: str, thinking: str) -> None:
    send(page, text, thinking=thinking)
    wait_answered(page)


def test_a_clicked_message_is_highlighted_and_its_bar_says_the_later_turns_are_replaced(page):
    ask(page, "Pick me: what is 2 + 2?")
    ask(page, "Then: what is 3 + 3?")
    first = page.locator("#m3-chatbot .message-row.user-row").first
    first.locator(".message").click()
    bar = page.locator("#m3-message-actions")
    expect(bar).to_contain_text("Question 1")
    expect(bar).to_contain_text("replaces its answer and every later question and answer")
    expect(first).to_have_class(re.compile(r"\bm3-selected\b"))
    assert first.locator(".message").evaluate("e => getComputedStyle(e).outlineStyle") != "none"
    assert page.locator("#m3-chatbot .m3-selected").count() == 1  # only the message clicked
    last = page.locator("#m3-chatbot .message-row.user-row").last
    last.locator(".message").click()
    expect(bar).to_contain_text("Question 2")
    expect(bar).to_contain_text("replaces its answer (Undo")
    expect(last).to_have_class(re.compile(r"\bm3-selected\b"))
    assert page.locator("#m3-chatbot .m3-selected").count() == 1


def test_a_tab_opened_empty_shows_a_chat_made_in_another_tab_within_seconds(page, app):
    second = page.context.new_page()  # opened before there is any chat
    open_chat(second, app.url)
    ask(page, "Made elsewhere: what is 5 + 5?")
    second.locator("#m3-chat-list").get_by_text("Made elsewhere: what is 5 + 5?").wait_for(timeout=3000)


def test_a_save_the_browser_did_not_announce_to_the_page_shows_within_seconds(page):
    """A tab still loading when another one saved got no storage event for it: the page looks for itself."""
    chat = new_chat().with_conversation(Conversation().ask("Unannounced question").add(AssistantTurn("Its answer.")))
    # Written by this very page: the browser tells only the other pages of a change, so this one is not told.
    page.evaluate("record => localStorage.setItem('m3ui-chat:' + record.id, JSON.stringify(record))",
                  chat_record(chat))
    page.locator("#m3-chat-list").get_by_text("Unannounced question").wait_for(timeout=3000)


def test_keyboard_shortcuts_and_their_help_sheet(page):
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    ask(page, "Shortcut: what is 6 * 7?")
    page.locator("#m3-chatbot").click(position={"x": 5, "y": 5})  # out of the message box: ? is not typed
    page.keyboard.press("?")
    help_sheet = page.locator("#m3-shortcuts")
    expect(help_sheet).to_be_visible()
    expect(help_sheet).to_contain_text("Copy the last answer")
    page.keyboard.press("Escape")
    expect(help_sheet).to_be_hidden()
    page.keyboard.press("Control+Shift+C")
    expect(page.locator("#m3-shortcut-note")).to_contain_text("Copied the last answer")
    assert page.evaluate("navigator.clipboard.readText()").startswith("42")
    page.keyboard.press("Control+Shift+S")
    expect(page.locator("#m3-chat-list")).to_be_hidden()
    page.keyboard.press("Control+Shift+S")
    expect(page.locator("#m3-chat-list")).to_be_visible()
    page.keyboard.press("Control+Shift+O")
    page.wait_for_function("document.querySelectorAll('#m3-chatbot .message-row.user-row').length === 0")
    page.keyboard.press("Shift+Escape")
    assert page.evaluate("document.activeElement === document.querySelector('#m3-message textarea')")
