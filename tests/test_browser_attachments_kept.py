"""Attachments kept by the browser when there is no account, in real Chromium against `python app.py` on the
simulated engine: a document's text goes to IndexedDB, not localStorage (about 5 MB for every chat), so a 6 MB
attachment survives a reload; chats saved before, with their documents in localStorage, are moved over; and a
file the browser has no room for says so on its chip."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from m3ui.conversation import Conversation
from m3ui.conversation.library import chat_record, new_chat
from tests.app_process import running_app
from tests.browser import browser_contexts
from tests.test_browser_attachments import POLL_MS, UI_TIMEOUT_MS, open_page, send, wait_chips

pytestmark = pytest.mark.browser
# The sim's tokenizer cuts letters into pieces of 8: 6 MB of this is ≈750K tokens, inside M3's 1M-token context
LINE = "abcdefgh" * 100 + "\n"
STORED_CHARS_JS = """() => Object.keys(localStorage).filter(k => k.startsWith('m3ui-chat:'))
    .reduce((n, k) => n + localStorage.getItem(k).length, 0)"""


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    with running_app(tmp_path_factory.mktemp("browser-attach-kept")) as app:
        app.wait_engine_ready()
        yield app


@pytest.fixture(scope="module")
def browser():
    with browser_contexts() as chromium:
        yield chromium


def meter_used(page) -> int:
    return int(page.get_attribute("#m3-context-meter .m3-meter", "data-used") or 0)


def test_a_6_mb_attachment_survives_a_reload_without_an_account(app, browser, tmp_path: Path) -> None:
    big = tmp_path / "six.txt"
    big.write_text("FIRST-LINE-MARKER\n" + LINE * (6 * 1024 * 1024 // len(LINE)) + "LAST-LINE-MARKER\n")
    page = open_page(browser, app.url)
    page.set_default_timeout(UI_TIMEOUT_MS * 2)
    page.set_input_files("#m3-attach", str(big))
    (chip,) = wait_chips(page, 1)
    assert "six.txt" in chip and "6.0 MB" in chip and "too large" not in chip, chip
    send(page, "What is in it?")
    assert page.evaluate(STORED_CHARS_JS) < 100_000  # the record holds a reference, not the text
    page.reload()
    page.wait_for_function("document.querySelector('#m3-chatbot')?.innerText.includes('FIRST-LINE-MARKER')",
                           polling=POLL_MS)
    assert "six.txt" in page.locator("#m3-chatbot .message-row").first.inner_text()
    # the whole text came back to the server: its meter counts the chat's ≈750K tokens again
    page.wait_for_function("Number(document.querySelector('#m3-context-meter .m3-meter')?.dataset.used) > 700000",
                           polling=POLL_MS)
    page.context.close()


def test_chats_kept_in_local_storage_before_are_moved_to_indexeddb(app, browser) -> None:
    page = open_page(browser, app.url)
    body = "\n".join(f"old row {i}" for i in range(2000))
    question = f'<document name="old.csv" size="20.0 KB">\n{body}\n</document>\n\nWhat rows?'
    chat = replace(new_chat().with_conversation(Conversation().ask(question)), title="old.csv")
    record = chat_record(chat)  # as saved before, its document in the record
    assert len(json.dumps(record)) > 20_000
    page.evaluate("r => localStorage.setItem('m3ui-chat:' + r.id, JSON.stringify(r))", record)
    page.reload()
    page.wait_for_function(f"({STORED_CHARS_JS})() < 5000", polling=POLL_MS)  # moved out of the record
    kept = json.loads(page.evaluate(f"localStorage.getItem('m3ui-chat:{record['id']}')"))
    assert kept["hash"] == record["hash"] and "old row 1999" not in json.dumps(kept)
    page.reload()  # read back whole from IndexedDB
    page.locator("#m3-chat-list").get_by_text("old.csv").first.click()
    page.wait_for_function("document.querySelector('#m3-chatbot')?.innerText.includes('old row 0')", polling=POLL_MS)
    page.context.close()


def test_a_file_the_browser_has_no_room_for_says_so_on_its_chip(app, browser, tmp_path: Path) -> None:
    context = browser.new_context(viewport={"width": 1440, "height": 1000})
    context.add_init_script("navigator.storage.estimate = async () => ({quota: 50000, usage: 20000})")
    page = context.new_page()
    page.set_default_timeout(UI_TIMEOUT_MS)
    page.goto(app.url)
    page.wait_for_function("document.querySelector('#m3-header')?.innerText.includes('ready')", polling=POLL_MS)
    small, large = tmp_path / "small.md", tmp_path / "large.log"
    small.write_text("a short note\n")
    large.write_text("INFO a line of a long log\n" * 4000)  # ≈100 KB, past the 30 KB left
    page.set_input_files("#m3-attach", [str(small), str(large)])
    wait_chips(page, 2)
    page.wait_for_selector("#m3-attachments .m3-chip-unkept")
    first, second = page.locator("#m3-attachments .m3-chip").all_inner_texts()
    assert "too large to keep in this browser" not in first
    assert "large.log" in second and "too large to keep in this browser" in second, second
    context.close()
