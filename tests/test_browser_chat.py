"""The Chat tab in real Chromium against `python app.py` on the simulated engine: thinking shown and folded,
no thinking when disabled, Stop (button and Esc) that makes the engine abort, saved chats that survive a reload
and a second tab, empty sends that change nothing, editing and retrying earlier messages, undo for delete and
clear, a list of many chats with search, inline math, exports that never touch the server's disk, and the
phone-width drawer."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import expect

from m3ui.conversation import AssistantTurn, Conversation
from m3ui.conversation.library import chat_record, new_chat
from tests.app_process import running_app
from tests.browser import UI_TIMEOUT_MS, chromium_page, ready_page, wait_engine_ready

pytestmark = pytest.mark.browser
# Records every title a thought block shows, so a state that lasts one frame is not missed by polling.
RECORD_THOUGHT_TITLES = """() => {
  window.__titles = [];
  const root = document.querySelector('#m3-chatbot');
  const seen = () => root.querySelectorAll('.thought-group [role=button]').forEach(
    e => window.__titles.push(e.innerText.trim()));
  new MutationObserver(seen).observe(root, {subtree: true, childList: true, characterData: true});
}"""


FEATURE_TIMEOUT_MS = 10_000  # for a control that is either there or not: fail fast when it is missing
TAB_STATE = """() => {
  const tab = document.querySelector('.m3-chat');
  return {buttons: [...tab.querySelectorAll('button')].filter(b => b.offsetParent).map(b => b.innerText.trim()),
          boxes: [...tab.querySelectorAll('input[type=text], textarea')].map(b => b.value),
          chat: document.querySelector('#m3-chatbot').innerText};
}"""


@pytest.fixture(scope="module")
def app_tmp(tmp_path_factory) -> Path:
    """The app's own temp folder (TMPDIR), to see what it writes there."""
    tmp = tmp_path_factory.mktemp("chat")
    (tmp / "tmp").mkdir()
    return tmp


@pytest.fixture(scope="module")
def app(app_tmp):
    with running_app(app_tmp, env={"TMPDIR": str(app_tmp / "tmp")}) as app:
        yield app


@pytest.fixture
def page(app):
    with ready_page(app.url) as page:
        wait_chats_loaded(page)
        yield page


def open_chat(page, url: str) -> None:
    page.set_default_timeout(UI_TIMEOUT_MS)
    page.goto(url)
    wait_engine_ready(page)
    wait_chats_loaded(page)


def wait_chats_loaded(page) -> None:
    page.wait_for_selector("#m3-message textarea")
    page.wait_for_selector("#m3-chat-list label", state="attached")  # the page's chats have loaded from the browser


QUESTIONS = "document.querySelectorAll('#m3-chatbot .message-row.user-row').length"
SHOWN = "(e => !!e && e.offsetParent !== null)(document.querySelector('{}'))"
POLL_MS = 100  # timer polling: a tab in the background gets no animation frames to poll on


def send(page, text: str, thinking: str | None = None) -> None:
    """Type and press Enter; returns once the question is in the chat (its answer may still be streaming, or, on a
    fast engine, done: a transient Stop button is not waited for)."""
    page.bring_to_front()
    if thinking:
        page.locator(".m3-thinking-mode").get_by_label(thinking, exact=True).check()
    asked = page.evaluate(QUESTIONS)
    box = page.locator("#m3-message textarea")
    box.fill(text)
    box.press("Enter")
    page.wait_for_function(f"n => {QUESTIONS} > n", arg=asked, polling=POLL_MS)


def start_new_chat(page) -> None:
    """New chat, and wait until it shows (so that counting the questions asked next starts from it)."""
    page.click("#m3-new-chat")
    page.wait_for_function(f"{QUESTIONS} === 0", polling=POLL_MS)


def wait_answered(page) -> None:
    page.wait_for_function(f"{SHOWN.format('#m3-send')} && !{SHOWN.format('#m3-stop')}", polling=POLL_MS)


def engine_url(page) -> str:
    match = re.search(r"at (http://127\.0\.0\.1:\d+)", page.inner_text("#m3-header"))
    assert match, page.inner_text("#m3-header")
    return match.group(1)


def engine_counter(url: str, name: str) -> float:
    metrics = httpx.get(f"{url}/metrics", timeout=10, trust_env=False).text
    match = re.search(rf"^sglang:{name}\{{[^}}]*\}} ([0-9.]+)$", metrics, re.MULTILINE)
    assert match, f"the engine must export sglang:{name}"
    return float(match.group(1))


def aborted_requests(url: str) -> float:
    return engine_counter(url, "num_aborted_requests_total")


def test_thinking_enabled_streams_a_reasoning_block_that_folds_away_above_the_answer(page):
    page.evaluate(RECORD_THOUGHT_TITLES)
    send(page, "Solve step by step: (12 + 7) * 3 - 48 / 6", thinking="Enabled")
    wait_answered(page)
    titles = page.evaluate("window.__titles")
    assert "Thinking…" in titles, titles
    block = page.locator("#m3-chatbot .thought-group").first
    assert re.fullmatch(r"Thought for \d+\.\d s", block.locator("[role=button]").inner_text().strip())
    # Gradio folds a finished thought block on its next render: wait for it rather than racing it.
    expect(block.get_by_text("one operation at a time")).to_be_hidden(timeout=10_000)
    answer = page.locator("#m3-chatbot .message-content").last.inner_text()
    assert "49" in answer and "TTFT" in answer
    block.locator("[role=button]").click()
    expect(block.get_by_text("one operation at a time")).to_be_visible(timeout=10_000)


def test_answers_stream_over_the_page_live_channel_and_end_as_saved(page):
    frames = "window.m3uiLive.frames()"
    send(page, "Count to 600", thinking="Disabled")
    page.wait_for_function("document.querySelector('#m3-chatbot').innerText.includes('100, 101')", polling=POLL_MS)
    assert page.is_visible("#m3-stop")  # shown while it streams, not at the end
    wait_answered(page)
    sent = page.evaluate(frames)
    assert sent >= 3, sent  # the answer's frames came over the channel (m3ui/live), not Gradio's queue
    assert "599, 600." in page.locator("#m3-chatbot .message-content").last.inner_text()
    page.click("#m3-regenerate")  # the other way of asking opens the channel too
    page.wait_for_function("document.querySelector('#m3-chatbot').innerText.includes('100, 101')", polling=POLL_MS)
    wait_answered(page)
    assert page.evaluate(frames) >= sent + 3
    page.reload()  # what the page showed at the end is what was saved
    page.wait_for_selector("#m3-chat-list label", state="attached")
    page.locator("#m3-chat-list label").first.click()
    page.wait_for_function("document.querySelector('#m3-chatbot').innerText.includes('599, 600.')", polling=POLL_MS)


def test_chats_are_kept_by_the_app_alone_not_also_in_gradios_run_history(page, app):
    """Gradio records every event's inputs and outputs (the whole chat) in the browser's storage, rereading and
    rewriting up to 100 of them at each event: with a few dozen saved chats that was ~150 ms of the page's CPU per
    answer, before the first token showed, and a copy of every chat the app's own storage and accounts know
    nothing about."""
    ask(page, "What is 5 + 5? (run history)")
    keys = page.evaluate("Object.keys(localStorage)")
    assert not [key for key in keys if key.startswith("gradio:")], keys
    holding = page.evaluate("Object.keys(localStorage).filter(k => localStorage.getItem(k).includes('(run history)'))")
    assert holding and all(key.startswith("m3ui") for key in holding), holding
    assert httpx.get(f"{app.url}/gradio_api/runs", timeout=10, trust_env=False).status_code == 404


def test_thinking_disabled_shows_no_reasoning_block(page):
    page.evaluate(RECORD_THOUGHT_TITLES)
    send(page, "Solve step by step: 17 * 23", thinking="Disabled")
    wait_answered(page)
    assert page.evaluate("window.__titles.filter(t => t.startsWith('Th'))") == []
    assert page.locator("#m3-chatbot .thought-group").count() == 0
    assert "391" in page.inner_text("#m3-chatbot")


def test_stop_mid_stream_stops_the_text_and_the_engine_aborts_the_request(page):
    url = engine_url(page)
    aborted_before = aborted_requests(url)
    send(page, "Count to 20000", thinking="Disabled")
    page.wait_for_function("document.querySelector('#m3-chatbot').innerText.includes('100, 101')")
    page.click("#m3-stop")
    page.wait_for_selector("#m3-send", state="visible")
    chat = page.locator("#m3-chatbot")
    assert "Stopped" in chat.inner_text()
    shown = chat.inner_text()
    time.sleep(1.0)  # the engine decodes hundreds of tokens a second: any leak would show by now
    assert chat.inner_text() == shown
    assert "20000." not in shown
    deadline = time.monotonic() + 20
    while aborted_requests(url) <= aborted_before:
        assert time.monotonic() < deadline, "the engine never counted an aborted request"
        time.sleep(0.2)


def test_a_reload_keeps_the_saved_conversations(page):
    send(page, "Solve step by step: 6 * 7", thinking="Adaptive")
    wait_answered(page)
    start_new_chat(page)
    send(page, "What is 2 + 2?")
    wait_answered(page)
    page.reload()
    page.wait_for_selector("#m3-message textarea")
    chats = page.locator("#m3-chat-list")
    chats.get_by_text("What is 2 + 2?").wait_for()
    assert "4" in page.inner_text("#m3-chatbot")
    chats.get_by_text("Solve step by step: 6 * 7").click()
    # wait for the question itself: '42' alone also matches the other answer's speed line ("423.6 tok/s")
    page.wait_for_function("document.querySelector('#m3-chatbot').innerText.includes('Solve step by step: 6 * 7')")
    shown = page.inner_text("#m3-chatbot")
    assert "42" in shown.split("TTFT")[0]
    assert "What is 2 + 2?" not in shown


def ask(page, text: str) -> None:
    send(page, text)
    wait_answered(page)


def chat_titles(page) -> list[str]:
    return [t.strip() for t in page.locator("#m3-chat-list label").all_inner_texts()]


def test_an_empty_send_or_regenerate_changes_nothing_on_the_page(page):
    send(page, "What is 2 + 2?", thinking="Disabled")  # no reasoning block: nothing folds while we look
    wait_answered(page)
    before = page.evaluate(TAB_STATE)
    assert {"Send", "+ New chat", "↻ Regenerate", "Clear", "Rename", "Delete"} <= set(before["buttons"])
    page.click("#m3-message textarea")
    page.keyboard.press("Enter")
    page.get_by_text("Type a message first.").first.wait_for()
    time.sleep(0.5)
    assert page.evaluate(TAB_STATE) == before
    start_new_chat(page)
    page.wait_for_function("!document.querySelector('#m3-chatbot').innerText.includes('2 + 2')")
    before = page.evaluate(TAB_STATE)
    page.click("#m3-regenerate")
    page.get_by_text("Nothing to regenerate yet").first.wait_for()
    time.sleep(0.5)
    assert page.evaluate(TAB_STATE) == before
    ask(page, "What is 3 + 3?")  # and the page still works
    assert "6" in page.inner_text("#m3-chatbot")


def test_two_tabs_of_one_browser_lose_no_chat(page, app):
    second = page.context.new_page()
    open_chat(second, app.url)
    ask(page, "Alpha: what is 2 + 2?")
    start_new_chat(second)
    ask(second, "Bravo: what is 3 + 3?")
    start_new_chat(page)
    ask(page, "Charlie: what is 4 + 4?")
    # the other tab shows it without a reload
    second.locator("#m3-chat-list").get_by_text("Charlie: what is 4 + 4?").wait_for()
    third = page.context.new_page()
    open_chat(third, app.url)
    third.locator("#m3-chat-list").get_by_text("Charlie: what is 4 + 4?").wait_for()
    titles = chat_titles(third)
    assert {"Alpha: what is 2 + 2?", "Bravo: what is 3 + 3?", "Charlie: what is 4 + 4?"} <= set(titles), titles


def test_the_same_chat_changed_in_two_tabs_at_once_keeps_both_versions(page, app):
    ask(page, "Shared: what is 2 + 2?")
    second = page.context.new_page()
    open_chat(second, app.url)
    send(page, "Count to 20000", thinking="Disabled")  # this tab cannot take the other's change while it streams
    page.wait_for_function("document.querySelector('#m3-chatbot').innerText.includes('100, 101')")
    second.locator("#m3-chat-list").get_by_text("Shared: what is 2 + 2?").click()
    ask(second, "From tab two: what is 5 + 5?")
    page.bring_to_front()  # as a person does to press Stop: a background tab gets a few frames a second, and
    page.click("#m3-stop")  # Playwright's "stable" check waited on them for 60 s once
    wait_answered(page)
    page.locator("#m3-chat-list").get_by_text("Copy: Shared: what is 2 + 2?").wait_for()
    texts = " ".join(page.evaluate(
        "Object.keys(localStorage).filter(k => k.startsWith('m3ui-chat:')).map(k => localStorage.getItem(k))"))
    assert "From tab two: what is 5 + 5?" in texts and "100, 101" in texts


def test_edit_an_earlier_question_resends_from_there_and_undo_restores_the_old_answers(page):
    ask(page, "What is 2 + 2?")
    ask(page, "What is 3 + 3?")
    page.locator("#m3-chatbot").get_by_label("Edit").first.click(timeout=FEATURE_TIMEOUT_MS)
    page.locator("#m3-chatbot textarea").first.fill("What is 5 + 5?")
    page.locator("#m3-chatbot").get_by_label("Submit").first.click()
    page.wait_for_function("!document.querySelector('#m3-chatbot').innerText.includes('3 + 3')", polling=POLL_MS)
    wait_answered(page)
    page.wait_for_function("document.querySelector('#m3-chatbot').innerText.includes('TTFT')", polling=POLL_MS)
    chat = page.inner_text("#m3-chatbot")
    assert "5 + 5" in chat and "10" in chat and "3 + 3" not in chat and "2 + 2" not in chat
    assert "answers after it are replaced" in page.inner_text(".m3-chat-hint")
    page.click("#m3-undo")
    page.wait_for_function("document.querySelector('#m3-chatbot').innerText.includes('3 + 3')")
    assert "5 + 5" not in page.inner_text("#m3-chatbot")


def test_retry_and_remove_one_earlier_message(page):
    ask(page, "What is 2 + 2?")
    ask(page, "What is 3 + 3?")
    page.locator("#m3-chatbot .message-row.user-row").first.locator(".message").click()
    page.click("#m3-delete-exchange", timeout=FEATURE_TIMEOUT_MS)
    page.wait_for_function("!document.querySelector('#m3-chatbot').innerText.includes('2 + 2')")
    assert "3 + 3" in page.inner_text("#m3-chatbot")
    ask(page, "What is 4 + 4?")
    page.locator("#m3-chatbot .message-row.user-row").first.locator(".message").click()
    page.click("#m3-retry-from")
    page.wait_for_selector("#m3-send", state="visible")
    page.wait_for_function("!document.querySelector('#m3-chatbot').innerText.includes('4 + 4')")
    assert "3 + 3" in page.inner_text("#m3-chatbot")


def test_esc_stops_an_answer_and_enter_while_streaming_queues_the_message(page):
    send(page, "Count to 20000", thinking="Disabled")
    page.wait_for_function("document.querySelector('#m3-chatbot').innerText.includes('100, 101')")
    page.fill("#m3-message textarea", "What is 2 + 2?")
    page.keyboard.press("Enter")
    page.wait_for_selector("#m3-queued", state="visible", timeout=FEATURE_TIMEOUT_MS)
    assert page.input_value("#m3-message textarea") == "What is 2 + 2?"  # kept, not swallowed
    page.keyboard.press("Escape")
    page.locator("#m3-chatbot").get_by_text("Stopped").wait_for()
    page.wait_for_function("document.querySelector('#m3-chatbot').innerText.includes('What is 2 + 2?')")
    wait_answered(page)
    assert page.locator("#m3-queued").is_hidden()
    assert "20000." not in page.inner_text("#m3-chatbot")


def test_delete_and_clear_can_be_undone(page):
    ask(page, "Keep me: what is 2 + 2?")
    page.click("#m3-delete-chat")
    page.wait_for_function("!document.querySelector('#m3-chat-list').innerText.includes('Keep me')")
    page.locator("#m3-undo").click(timeout=FEATURE_TIMEOUT_MS)
    page.locator("#m3-chat-list").get_by_text("Keep me: what is 2 + 2?").wait_for()
    page.wait_for_function("document.querySelector('#m3-chatbot').innerText.includes('Keep me')")
    page.click("#m3-clear")
    page.wait_for_function("!document.querySelector('#m3-chatbot').innerText.includes('Keep me')")
    page.click("#m3-undo")
    page.wait_for_function("document.querySelector('#m3-chatbot').innerText.includes('Keep me')")
    page.reload()
    page.wait_for_selector("#m3-message textarea")
    page.locator("#m3-chat-list").get_by_text("Keep me: what is 2 + 2?").click()
    page.wait_for_function("document.querySelector('#m3-chatbot').innerText.includes('4')")


def seeded_records(count: int) -> list[dict]:
    records = []
    for number in range(count):
        chat = new_chat()
        text = "We talked about Oslo fjords." if number == 7 else f"Chat number {number}."
        chat = chat.with_conversation(Conversation().ask(f"Question {number}").add(AssistantTurn(text)))
        records.append(chat_record(chat))
    return records


def test_sixty_chats_scroll_with_the_actions_in_view_and_search_finds_text(page):
    records = seeded_records(60)
    page.evaluate("rs => rs.forEach(r => localStorage.setItem('m3ui-chat:' + r.id, JSON.stringify(r)))", records)
    page.reload()
    page.wait_for_selector("#m3-message textarea")
    page.locator("#m3-chat-list").get_by_text("Question 59", exact=True).wait_for()
    assert chat_titles(page)[:2] == ["Question 59", "Question 58"]  # newest first
    assert page.evaluate("(e => e.scrollHeight > e.clientHeight + 100)(document.querySelector('#m3-chat-list'))")
    for action in ("#m3-new-chat", "#m3-delete-chat", "#m3-export-md", "#m3-chat-search"):
        box = page.locator(action).bounding_box()
        assert box and box["y"] + box["height"] <= 900, action
    page.fill("#m3-chat-search input, #m3-chat-search textarea", "fjords")
    page.wait_for_function("document.querySelectorAll('#m3-chat-list label').length === 1")
    assert chat_titles(page) == ["Question 7"]
    page.locator("#m3-chat-list").get_by_text("Question 7", exact=True).click()
    page.wait_for_function("document.querySelector('#m3-chatbot').innerText.includes('fjords')")
    send(page, "```python\nprint(1)\n```\nWhy does **this** fail?")
    wait_answered(page)
    assert page.input_value("#m3-chat-title input, #m3-chat-title textarea") == "Question 7"
    start_new_chat(page)
    page.fill("#m3-chat-search input, #m3-chat-search textarea", "")
    ask(page, "```python\nprint(1)\n```\nWhy does **this** fail?")
    assert chat_titles(page)[0] == "Why does this fail?"


def test_inline_and_display_math_render_and_code_keeps_its_copy_button(page):
    ask(page, "Inline $x^2$ and display $$y^2$$ then\n```python\nprint(1)\n```")
    question = page.locator("#m3-chatbot .message-row.user-row").first
    assert question.locator(".katex").count() == 2
    assert question.locator(".copy_code_button").count() == 1


def test_export_downloads_the_chat_and_writes_nothing_on_the_server(page, app_tmp):
    ask(page, "Export me: what is 2 + 2?")
    with page.expect_download(timeout=FEATURE_TIMEOUT_MS) as download:
        page.click("#m3-export-md")
    assert download.value.suggested_filename == "export-me-what-is-2-2.md"
    assert "Export me: what is 2 + 2?" in Path(download.value.path()).read_text()
    with page.expect_download(timeout=FEATURE_TIMEOUT_MS) as download:
        page.click("#m3-export-json")
    assert json.loads(Path(download.value.path()).read_text())["turns"][0]["content"] == "Export me: what is 2 + 2?"
    assert not list((app_tmp / "tmp").glob("m3ui-exports-*"))


def test_phone_width_folds_the_chat_list_into_a_drawer_and_the_chat_fills_the_height(app):
    with chromium_page(viewport=(390, 844)) as page:
        open_chat(page, app.url)
        assert page.locator("#m3-chat-list").is_hidden()
        ask(page, "Phone: what is 2 + 2?")
        page.click("#m3-chats-toggle", timeout=FEATURE_TIMEOUT_MS)
        page.locator("#m3-chat-list").get_by_text("Phone: what is 2 + 2?").click()
        page.wait_for_selector("#m3-chat-list", state="hidden")
        chat = page.locator("#m3-chatbot").bounding_box()
        composer = page.locator("#m3-message").bounding_box()
        # the chat takes the height the screen leaves under the header, the simulated banner and the tabs: the
        # message box, right under it (past the attachments row), ends near the screen's bottom edge
        assert chat["height"] >= 260, chat
        assert 0 <= composer["y"] - (chat["y"] + chat["height"]) < 150, (chat, composer)
        assert 0 <= 844 - (composer["y"] + composer["height"]) < 100, composer
