"""A full day on the Chat tab in real Chromium (issue 10, "Done when"): several chats in two tabs of one browser,
an edit that is undone and one that is kept, a retry, a delete that is undone, exports, a detour to the Tools
tab, reloads, and at the end every question typed and every answer shown is still there, in the list and in
the browser's storage."""

from __future__ import annotations

import json
import re
import time
from dataclasses import replace
from pathlib import Path

import pytest

from m3ui.conversation.library import chat_record, new_chat
from tests.app_process import running_app
from tests.browser import chromium_page
from tests.test_browser_chat import (
    FEATURE_TIMEOUT_MS,
    POLL_MS,
    ask,
    chat_titles,
    open_chat,
    start_new_chat,
    wait_answered,
)

pytestmark = pytest.mark.browser
ANSWER_TEXT = """() => {
  const answers = [...document.querySelectorAll('#m3-chatbot .message-row.bot-row .message-content')];
  return answers.map(a => a.innerText).filter(t => t.includes('TTFT')).map(t => t.split('TTFT')[0].trim());
}"""
STORED = """() => Object.keys(localStorage).filter(k => k.startsWith('m3ui-chat:'))
  .map(k => localStorage.getItem(k)).join('\\n')"""
STORED_CHAT = """t => Object.keys(localStorage).filter(k => k.startsWith('m3ui-chat:'))
  .map(k => localStorage.getItem(k)).find(r => JSON.parse(r).title === t)"""
# The page lists the browser's chats in the order a sync would give them (newest first): no refresh from another
# tab's save is still on its way to reorder the list.
CAUGHT_UP = """() => {
  const stored = Object.keys(localStorage).filter(k => k.startsWith('m3ui-chat:'))
    .map(k => JSON.parse(localStorage.getItem(k))).sort((a, b) => b.updated_at - a.updated_at).map(r => r.title);
  const shown = [...document.querySelectorAll('#m3-chat-list label')].map(l => l.innerText.trim());
  return JSON.stringify(shown.filter(t => stored.includes(t))) === JSON.stringify(stored);
}"""
# This tab's requests to Gradio's queue leave `ms` late: a sync stays on its way that long.
DELAY_JOINS = """ms => { const fetch = window.fetch; window.fetch = (url, init) => String(url).includes('queue/join')
  ? new Promise(done => setTimeout(done, ms)).then(() => fetch(url, init)) : fetch(url, init); }"""
COUNT_READS = """() => { window.__reads = 0; const read = window.m3uiChats.read;
  window.m3uiChats.read = () => { window.__reads++; return read(); }; }"""  # a sync reads the browser's chats
WRITE = "records => window.m3uiChats.write(records)"  # the page script's save, as an answer's end calls it
TITLE = "() => document.querySelector('#m3-chat-title input, #m3-chat-title textarea').value"


def last_answer(page) -> str:
    return page.evaluate(ANSWER_TEXT)[-1]


def wait_text(page, selector: str, text: str, present: bool = True) -> None:
    page.wait_for_function("([s, t, p]) => document.querySelector(s).innerText.includes(t) === p",
                           arg=[selector, text, present], polling=POLL_MS)


def open_list_chat(page, title: str) -> None:
    """Click the chat in the list once the page has taken in the other tabs' saves: a refresh landing between
    Playwright finding the row and clicking it relabels that row (see test_a_click_on_the_chat_list_...)."""
    page.bring_to_front()
    page.wait_for_function(CAUGHT_UP, polling=POLL_MS)
    page.locator("#m3-chat-list").get_by_text(title, exact=True).click()
    page.wait_for_function(f"t => ({TITLE})() === t", arg=title, polling=POLL_MS)


def test_a_full_day_in_two_tabs_loses_nothing_typed_or_answered(tmp_path):
    kept: dict[str, str] = {}  # question -> the answer shown for it, everything that must survive the day
    with running_app(tmp_path, env={"TMPDIR": str(tmp_path)}) as app, chromium_page() as morning:
        open_chat(morning, app.url)
        afternoon = morning.context.new_page()
        open_chat(afternoon, app.url)

        for question in ("Plan: what is 2 + 2?", "Then: what is 3 + 3?"):
            ask(morning, question)
            kept[question] = last_answer(morning)
        start_new_chat(afternoon)
        ask(afternoon, "Solve step by step: 17 * 23")
        kept["Solve step by step: 17 * 23"] = last_answer(afternoon)
        start_new_chat(morning)
        ask(morning, "Scratch: what is 5 + 5?")
        kept["Scratch: what is 5 + 5?"] = last_answer(morning)

        # An edit that is taken back, then a retry of the first question (its old answer is replaced).
        open_list_chat(morning, "Plan: what is 2 + 2?")
        morning.locator("#m3-chatbot").get_by_label("Edit").first.click(timeout=FEATURE_TIMEOUT_MS)
        morning.locator("#m3-chatbot textarea").first.fill("Plan: what is 9 + 9?")
        morning.locator("#m3-chatbot").get_by_label("Submit").first.click()
        wait_text(morning, "#m3-chatbot", "18")
        morning.wait_for_selector("#m3-undo", state="visible")
        morning.click("#m3-undo")
        wait_text(morning, "#m3-chatbot", "3 + 3")
        before_retry = morning.evaluate(STORED_CHAT, "Plan: what is 2 + 2?")
        morning.locator("#m3-chatbot .message-row.user-row").nth(1).locator(".message").click()
        morning.click("#m3-retry-from")
        # the retried question is saved (Send turns into Stop with it), then the answer ends and the page is idle
        morning.wait_for_function(f"([t, r]) => ({STORED_CHAT})(t) !== r", arg=["Plan: what is 2 + 2?", before_retry],
                                  polling=POLL_MS)
        wait_answered(morning)
        kept["Then: what is 3 + 3?"] = last_answer(morning)

        # A delete that is taken back.
        open_list_chat(afternoon, "Scratch: what is 5 + 5?")
        afternoon.click("#m3-delete-chat")  # the afternoon tab is in front (open_list_chat)
        wait_text(afternoon, "#m3-chat-list", "Scratch", present=False)
        afternoon.click("#m3-undo")
        afternoon.locator("#m3-chat-list").get_by_text("Scratch: what is 5 + 5?").wait_for()

        # Exports of the morning's chat.
        open_list_chat(morning, "Plan: what is 2 + 2?")
        with morning.expect_download(timeout=FEATURE_TIMEOUT_MS) as download:
            morning.click("#m3-export-md")
        exported = Path(download.value.path()).read_text()
        assert all(q in exported and kept[q] in exported for q in ("Plan: what is 2 + 2?", "Then: what is 3 + 3?"))

        # The Tools tab in between, and back.
        morning.get_by_role("tab", name="Tools").click()
        morning.locator("#m3-tools-message textarea").fill("What is 17 * 23?")
        morning.locator("#m3-tools-message textarea").press("Enter")
        wait_text(morning, "#m3-tools-chatbot", "391")
        morning.get_by_role("tab", name="Chat").click()

        # Reloads, and a third page opened at the end of the day.
        afternoon.reload()
        morning.reload()
        evening = morning.context.new_page()
        open_chat(evening, app.url)
        evening.locator("#m3-chat-list").get_by_text("Scratch: what is 5 + 5?").wait_for()
        stored = evening.evaluate(STORED)
        for question in kept:  # as typed, in the browser's storage (answers are checked as shown, below)
            assert json.dumps(question, ensure_ascii=False)[1:-1] in stored, question
        titles = chat_titles(evening)
        assert {"Plan: what is 2 + 2?", "Solve step by step: 17 * 23", "Scratch: what is 5 + 5?"} <= set(titles)
        assert not any(title.startswith("Copy:") for title in titles), titles  # no conflict happened all day
        for title in ("Plan: what is 2 + 2?", "Solve step by step: 17 * 23", "Scratch: what is 5 + 5?"):
            open_list_chat(evening, title)
            shown = evening.inner_text("#m3-chatbot")
            for question, answer in kept.items():
                if question == title or (title.startswith("Plan") and question.startswith("Then")):
                    assert question in shown and re.sub(r"\s+", " ", answer) in re.sub(r"\s+", " ", shown)
    assert not list(tmp_path.glob("m3ui-exports-*"))


def test_a_click_on_the_chat_list_opens_the_chat_pointed_at_while_another_tab_saves(tmp_path):
    """Another tab's save reorders this tab's list (newest first), and Gradio's radio relabels its rows in place:
    the row under the pointer would turn into another chat just before the click. The list waits while the
    pointer is on it, and takes the other tab's change once the pointer leaves."""
    with running_app(tmp_path, env={"TMPDIR": str(tmp_path)}) as app, chromium_page() as other:
        open_chat(other, app.url)
        ask(other, "Alpha: what is 2 + 2?")
        page = other.context.new_page()
        open_chat(page, app.url)
        start_new_chat(page)
        ask(page, "Bravo: what is 3 + 3?")
        page.wait_for_function(CAUGHT_UP, polling=POLL_MS)
        assert chat_titles(page) == ["Bravo: what is 3 + 3?", "Alpha: what is 2 + 2?"]
        row = page.locator("#m3-chat-list label").filter(has_text="Alpha: what is 2 + 2?").bounding_box()
        x, y = row["x"] + row["width"] / 2, row["y"] + row["height"] / 2
        page.mouse.move(x, y)  # the person points at Alpha

        other.locator("#m3-message textarea").fill("Alpha again: what is 4 + 4?")  # the other tab stays behind
        other.locator("#m3-message textarea").press("Enter")
        page.wait_for_function(f"t => (({STORED_CHAT})(t) || '').includes('4 + 4')", arg="Alpha: what is 2 + 2?",
                               polling=POLL_MS)  # saved: this tab has been told
        time.sleep(2)  # a sync takes well under this when it is not held
        page.mouse.down()
        page.mouse.up()
        page.wait_for_function(f"t => ({TITLE})() === t", arg="Alpha: what is 2 + 2?", polling=POLL_MS,
                               timeout=FEATURE_TIMEOUT_MS)

        page.locator("#m3-message textarea").hover()  # the pointer leaves the list: the other tab's save shows
        page.wait_for_function(CAUGHT_UP, polling=POLL_MS)
        wait_text(page, "#m3-chatbot", "Alpha again: what is 4 + 4?")
        assert chat_titles(page) == ["Alpha: what is 2 + 2?", "Bravo: what is 3 + 3?"]


def test_a_save_landing_while_a_sync_is_on_its_way_is_shown_too(tmp_path):
    """Another tab saves twice, the second time while this tab's sync of the first is still on its way (its
    requests are held back here): the second save gets a sync of its own, it is not dropped."""
    saved = [{**chat_record(replace(new_chat(), title=title)), "base": None} for title in ("Xray", "Yankee")]
    with running_app(tmp_path, env={"TMPDIR": str(tmp_path)}) as app, chromium_page() as other:
        open_chat(other, app.url)
        page = other.context.new_page()
        open_chat(page, app.url)
        page.evaluate(COUNT_READS)
        page.evaluate(DELAY_JOINS, 3000)
        other.evaluate(WRITE, saved[:1])
        page.wait_for_function("() => window.__reads > 0", polling=POLL_MS)  # this tab's sync of Xray is on its way
        other.evaluate(WRITE, saved[1:])
        page.locator("#m3-chat-list").get_by_text("Yankee", exact=True).wait_for()
        assert {"Xray", "Yankee"} <= set(chat_titles(page))
