"""The Chat tab in real Chromium against `python app.py` on the simulated engine: thinking shown and folded,
no thinking when disabled, Stop that makes the engine abort, and saved chats that survive a reload."""

from __future__ import annotations

import re
import time

import httpx
import pytest
from playwright.sync_api import expect

from tests.app_process import running_app
from tests.browser import chromium_page

pytestmark = pytest.mark.browser
UI_TIMEOUT_MS = 60_000
# Records every title a thought block shows, so a state that lasts one frame is not missed by polling.
RECORD_THOUGHT_TITLES = """() => {
  window.__titles = [];
  const root = document.querySelector('#m3-chatbot');
  const seen = () => root.querySelectorAll('.thought-group [role=button]').forEach(
    e => window.__titles.push(e.innerText.trim()));
  new MutationObserver(seen).observe(root, {subtree: true, childList: true, characterData: true});
}"""


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    with running_app(tmp_path_factory.mktemp("chat")) as app:
        yield app


@pytest.fixture
def page(app):
    with chromium_page() as page:
        page.set_default_timeout(UI_TIMEOUT_MS)
        page.goto(app.url)
        page.wait_for_selector("#m3-message textarea")
        wait_engine_ready(page)
        yield page


def wait_engine_ready(page) -> None:
    """The header says so (the page's own view of the engine)."""
    page.wait_for_selector("#m3-header")
    page.wait_for_function("document.querySelector('#m3-header').innerText.includes('ready')")


def send(page, text: str, thinking: str | None = None) -> None:
    if thinking:
        page.locator(".m3-thinking-mode").get_by_label(thinking, exact=True).check()
    page.fill("#m3-message textarea", text)
    page.keyboard.press("Enter")
    page.wait_for_selector("#m3-stop", state="visible")


def wait_answered(page) -> None:
    page.wait_for_selector("#m3-send", state="visible")
    page.wait_for_selector("#m3-stop", state="hidden")


def engine_url(page) -> str:
    match = re.search(r"at (http://127\.0\.0\.1:\d+)", page.inner_text("#m3-header"))
    assert match, page.inner_text("#m3-header")
    return match.group(1)


def aborted_requests(url: str) -> float:
    metrics = httpx.get(f"{url}/metrics", timeout=10, trust_env=False).text
    match = re.search(r"^sglang:num_aborted_requests_total\{[^}]*\} ([0-9.]+)$", metrics, re.MULTILINE)
    assert match, "the engine must export sglang:num_aborted_requests_total"
    return float(match.group(1))


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
    page.click("#m3-new-chat")
    send(page, "What is 2 + 2?")
    wait_answered(page)
    page.reload()
    page.wait_for_selector("#m3-message textarea")
    chats = page.locator("#m3-chat-list")
    chats.get_by_text("What is 2 + 2?").wait_for()
    assert "4" in page.inner_text("#m3-chatbot")
    chats.get_by_text("Solve step by step: 6 * 7").click()
    page.wait_for_function("document.querySelector('#m3-chatbot').innerText.includes('42')")
    assert "What is 2 + 2?" not in page.inner_text("#m3-chatbot")
