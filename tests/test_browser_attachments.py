"""Attachments in real Chromium against `python app.py` on the simulated engine (paced prefill): the file
chooser and drag-and-drop give chips with size and tokens (a binary file's chip says why it was refused); the
question shows its document folded; a long prompt shows its prefill progress and Stop aborts the engine
request during the prefill; over the context the question is held back with a choice; a reload keeps the
attachments; and two accounts never see each other's files. Screenshots at 1440 and 390 wide."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

from tests.app_process import running_app, running_app_with_accounts
from tests.browser import browser_contexts
from tests.test_browser_accounts import sign_in
from tests.test_browser_chat import engine_counter, engine_url

pytestmark = pytest.mark.browser
UI_TIMEOUT_MS = 60_000
POLL_MS = 200  # pages of a launched browser get no animation frames in the background
# Prefill paced at a rate a test can watch (≈30K tokens: ≈15 s); decoding fast, so answers do not drag.
PACED = {"M3UI_SIM_UNTHROTTLED": "0", "M3UI_SIM_GPU_PREFILL_TPS": "2000", "M3UI_SIM_DECODE_TPS": "400"}
SHOTS = Path(os.environ.get("M3UI_SCREENSHOTS", "/tmp/m3ui-screenshots"))
ALICE = ("alice", "alices-password")
BEN = ("ben", "bens-password")


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("attach-files")
    out = {"notes": folder / "notes.md", "blob": folder / "blob.bin", "big": folder / "big.log"}
    out["notes"].write_text("".join(f"note line {i}: the quarterly numbers\n" for i in range(60)))
    out["blob"].write_bytes(b"\x00\x01\x02\x03binary" * 20)
    out["big"].write_text("".join(f"2026-12-02 12:00:{i % 60:02d} INFO worker {i} finished a step\n"
                                  for i in range(2500)))  # ≈100 KB: ≈30K tokens by the estimate
    return out


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    with running_app(tmp_path_factory.mktemp("browser-attach"), env=PACED) as app:
        app.wait_engine_ready()
        yield app


def open_page(pw_browser, url: str, width: int = 1440):
    page = pw_browser.new_context(viewport={"width": width, "height": 1000}).new_page()
    page.set_default_timeout(UI_TIMEOUT_MS)
    page.goto(url)
    page.wait_for_selector("#m3-header")
    page.wait_for_function("document.querySelector('#m3-header').innerText.includes('ready')", polling=POLL_MS)
    return page


@pytest.fixture(scope="module")
def browser():
    with browser_contexts() as chromium:
        yield chromium


def chips(page) -> list[str]:
    return page.locator("#m3-attachments .m3-chip").all_inner_texts()


def wait_chips(page, count: int) -> list[str]:
    page.wait_for_function(f"document.querySelectorAll('#m3-attachments .m3-chip').length === {count}", polling=POLL_MS)
    return chips(page)


def progress_after_a_second(page) -> str:
    """The progress bar's text once a second or more went by (the prefill still running)."""
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        text = page.evaluate("document.querySelector('#m3-prefill-progress')?.textContent") or ""
        if re.search(r": [1-9]\d*\.\d s of", text):
            return text
        time.sleep(0.3)
    raise AssertionError(f"no progress past a second: {text!r}")


def send(page, text: str) -> None:
    page.fill("#m3-message textarea", text)
    page.keyboard.press("Enter")
    page.wait_for_selector("#m3-stop", state="visible")
    page.wait_for_selector("#m3-stop", state="hidden")


def test_the_file_chooser_attaches_with_chips_and_the_question_shows_the_document_folded(app, browser, files):
    page = open_page(browser, app.url)
    page.set_input_files("#m3-attach", [str(files["notes"]), str(files["blob"])])
    notes, blob = wait_chips(page, 2)
    # counted by the engine (the sim's /v1/messages/count_tokens), and the chip says so
    assert "notes.md" in notes and "KB" in notes and re.search(r"\b[\d,]+ tokens \(engine\)", notes), notes
    assert "blob.bin" in blob and "a binary file" in blob, blob
    assert "context" in page.inner_text("#m3-context-meter") and "1,048,576" in page.inner_text("#m3-context-meter")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "attach-chips-1440.png"), full_page=True)
    page.click("#m3-attachments .m3-chip-refused .m3-chip-remove")
    assert wait_chips(page, 1)[0].startswith("notes.md")
    send(page, "What do these notes say?")
    stats = page.locator("#m3-chatbot .m3-stats").last.inner_text()
    prompt = int(re.search(r"([\d,]+) → [\d,]+ tokens", stats).group(1).replace(",", ""))
    assert prompt > 400, stats  # the engine read the file, not only the question
    assert wait_chips(page, 0) == []
    question = page.locator("#m3-chatbot .message-row").first.inner_text()
    assert "notes.md" in question and "note line 0" in question and "What do these notes say?" in question
    assert "note line 59" not in question  # folded: the rest is behind the expand control
    page.click("#m3-chatbot details.m3-fold summary")
    page.wait_for_function("document.querySelector('#m3-chatbot')?.innerText.includes('note line 59')", polling=POLL_MS)
    page.screenshot(path=str(SHOTS / "attach-sent-1440.png"), full_page=True)
    page.reload()  # the chat, with its document, comes back from the browser's storage
    page.wait_for_function("document.querySelector('#m3-chatbot')?.innerText.includes('note line 0')", polling=POLL_MS)
    assert "notes.md" in page.locator("#m3-chatbot .message-row").first.inner_text()
    page.context.close()


def test_a_file_dropped_on_the_chat_is_attached(app, browser):
    page = open_page(browser, app.url, width=390)
    page.evaluate("""() => {
        const data = new DataTransfer();
        data.items.add(new File(["col_a,col_b\\n1,2\\n3,4\\n"], "table.csv", {type: "text/csv"}));
        const zone = document.querySelector('#m3-chatbot');
        for (const type of ['dragover', 'drop'])
            zone.dispatchEvent(new DragEvent(type, {dataTransfer: data, bubbles: true, cancelable: true}));
    }""")
    (chip,) = wait_chips(page, 1)
    assert "table.csv" in chip and "tokens" in chip
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "attach-drop-390.png"), full_page=True)
    page.context.close()


def test_a_long_prompt_shows_its_prefill_progress_and_stop_aborts_the_engine_request(app, browser, files):
    page = open_page(browser, app.url)
    page.click("#m3-new-chat")
    page.set_input_files("#m3-attach", [str(files["big"])])
    wait_chips(page, 1)
    url = engine_url(page)
    aborted = engine_counter(url, "num_aborted_requests_total")
    page.fill("#m3-message textarea", "Which worker failed?")
    page.keyboard.press("Enter")
    progress = page.locator("#m3-prefill-progress")
    progress.wait_for(state="visible")
    text = progress_after_a_second(page)
    assert "Reading" in text and "tokens" in text and "of ≈" in text and "configured" in text, text
    width = page.evaluate("parseFloat(document.querySelector('#m3-prefill-progress .m3-prefill-bar div').style.width)")
    assert 0 < width < 100
    page.screenshot(path=str(SHOTS / "attach-prefill-1440.png"), full_page=True)
    page.click("#m3-stop")
    page.wait_for_selector("#m3-stop", state="hidden")
    progress.wait_for(state="detached")
    deadline = time.monotonic() + 10
    while engine_counter(url, "num_aborted_requests_total") <= aborted and time.monotonic() < deadline:
        time.sleep(0.2)
    assert engine_counter(url, "num_aborted_requests_total") == aborted + 1
    page.context.close()


def test_over_the_context_the_question_is_held_back_with_a_choice(app, browser, files):
    page = open_page(browser, app.url)
    page.click("#m3-new-chat")
    max_tokens = page.get_by_label("Max tokens")
    max_tokens.fill("1040000")
    max_tokens.press("Tab")
    page.set_input_files("#m3-attach", [str(files["big"])])
    wait_chips(page, 1)
    page.wait_for_function("document.querySelector('#m3-context-meter')?.innerText.includes('over')", polling=POLL_MS)
    requests = engine_counter(engine_url(page), "num_requests_total")
    page.fill("#m3-message textarea", "Summarize the log")
    page.keyboard.press("Enter")
    page.locator("#m3-context-choice").wait_for(state="visible")
    choice = page.inner_text("#m3-context-choice")
    assert "Over the context by" in choice and "big.log" in choice and "Nothing was sent" in choice, choice
    page.wait_for_selector("#m3-send", state="visible")
    time.sleep(1)  # a toast would be up by now
    # A warning with a choice, not an error: no error toast, and the panel is drawn as a warning
    assert page.locator(".toast-body.error").count() == 0, page.locator(".toast-body").all_inner_texts()
    assert "Error" not in " ".join(page.locator(".toast-body").all_inner_texts())
    assert choice.startswith("⚠"), choice
    border = page.evaluate("getComputedStyle(document.querySelector('#m3-context-choice')).borderLeftColor")
    assert border == "rgb(180, 83, 9)", border  # --m3-sim, the page's warning colour (m3ui.css .m3-note-warn)
    assert page.input_value("#m3-message textarea") == "Summarize the log"  # nothing lost
    assert engine_counter(engine_url(page), "num_requests_total") == requests  # nothing sent
    page.screenshot(path=str(SHOTS / "attach-over-1440.png"), full_page=True)
    page.click("#m3-context-trim")
    page.locator("#m3-context-choice").wait_for(state="hidden")
    wait_chips(page, 1)
    page.wait_for_function("document.querySelector('#m3-attachments')?.innerText.includes('trimmed')", polling=POLL_MS)
    assert "over" not in page.inner_text("#m3-context-meter")
    page.context.close()


@pytest.fixture(scope="module")
def accounts_app(tmp_path_factory):
    with running_app_with_accounts(tmp_path_factory.mktemp("browser-attach-accounts"), ALICE, BEN) as running:
        yield running


def test_two_accounts_never_see_each_others_files_and_a_reload_keeps_them(accounts_app, browser, tmp_path):
    secret = tmp_path / "alice-plan.txt"
    secret.write_text("ALICE-ONLY-MARKER: the launch is on Friday\n")
    alice = browser.new_context(viewport={"width": 1440, "height": 1000}).new_page()
    sign_in(alice, accounts_app.url, *ALICE)
    alice.set_input_files("#m3-attach", [str(secret)])
    wait_chips(alice, 1)
    ben = browser.new_context(viewport={"width": 390, "height": 900}).new_page()
    sign_in(ben, accounts_app.url, *BEN)
    time.sleep(1.5)
    assert chips(ben) == []  # chips are the page's own
    send(alice, "When is the launch?")
    alice.reload()
    alice.wait_for_function("document.querySelector('#m3-chatbot')?.innerText.includes('ALICE-ONLY-MARKER')",
                            polling=POLL_MS)
    ben.reload()
    ben.locator("#m3-message textarea").wait_for()
    time.sleep(1.5)
    assert "ALICE-ONLY-MARKER" not in ben.inner_text("body")
    assert "launch" not in ben.inner_text("#m3-chat-list")
    ben.screenshot(path=str(SHOTS / "attach-other-account-390.png"), full_page=True)


def test_files_without_typed_text_are_sent_as_the_question(app, browser, files):
    page = open_page(browser, app.url)
    page.click("#m3-new-chat")
    page.set_input_files("#m3-attach", [str(files["notes"])])
    wait_chips(page, 1)
    requests = engine_counter(engine_url(page), "num_requests_total")
    page.click("#m3-send")  # nothing typed: the file is the question
    page.wait_for_selector("#m3-stop", state="visible")
    page.wait_for_selector("#m3-stop", state="hidden")
    assert wait_chips(page, 0) == []
    assert engine_counter(engine_url(page), "num_requests_total") == requests + 1
    question = page.locator("#m3-chatbot .message-row").first.inner_text()
    assert "notes.md" in question and "note line 0" in question, question
    assert page.locator("#m3-chatbot .m3-stats").count() == 1  # answered
    assert "notes.md" in page.inner_text("#m3-chat-list")  # titled by the file's name
    page.context.close()
