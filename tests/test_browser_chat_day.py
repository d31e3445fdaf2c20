"""A full day on the Chat tab in real Chromium (issue 10, "Done when"): several chats in two tabs of one browser,
an edit that is undone and one that is kept, a retry, a delete that is undone, exports, a detour to the Tools
tab, reloads, and at the end every question typed and every answer shown is still there, in the list and in
the browser's storage."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.app_process import running_app
from tests.browser import chromium_page
from tests.test_browser_chat import FEATURE_TIMEOUT_MS, POLL_MS, ask, chat_titles, open_chat, start_new_chat

pytestmark = pytest.mark.browser
ANSWER_TEXT = """() => {
  const answers = [...document.querySelectorAll('#m3-chatbot .message-row.bot-row .message-content')];
  return answers.map(a => a.innerText).filter(t => t.includes('TTFT')).map(t => t.split('TTFT')[0].trim());
}"""
STORED = """() => Object.keys(localStorage).filter(k => k.startsWith('m3ui-chat:'))
  .map(k => localStorage.getItem(k)).join('\\n')"""


def last_answer(page) -> str:
    return page.evaluate(ANSWER_TEXT)[-1]


def wait_text(page, selector: str, text: str, present: bool = True) -> None:
    page.wait_for_function("([s, t, p]) => document.querySelector(s).innerText.includes(t) === p",
                           arg=[selector, text, present], polling=POLL_MS)


def open_list_chat(page, title: str) -> None:
    page.bring_to_front()
    page.locator("#m3-chat-list").get_by_text(title, exact=True).click()
    page.wait_for_function("t => document.querySelector('#m3-chat-title input, #m3-chat-title textarea').value === t",
                           arg=title, polling=POLL_MS)


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
        morning.locator("#m3-chatbot .message-row.user-row").nth(1).locator(".message").click()
        morning.click("#m3-retry-from")
        morning.wait_for_selector("#m3-send", state="visible")
        wait_text(morning, "#m3-chatbot", "TTFT")
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
