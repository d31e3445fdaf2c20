"""The Tools tab as a person uses it, in real Chromium against `python app.py` on the simulated engine: a call that
waits for approval has Approve and Deny on screen at 1440×900 and its arguments shown once; the tool chat survives
a reload and exports; a message sent while an answer streams is queued, as in the Chat tab."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser import chromium_page
from tests.test_browser_chat import wait_engine_ready
from tests.test_browser_tools import WEATHER, ask, ask_only, wait_answered

pytestmark = pytest.mark.browser
UI_TIMEOUT_MS = 60_000
LAPTOP = (1440, 900)


@pytest.fixture
def page(app):
    with chromium_page(LAPTOP) as page:
        open_tools(page, app.url)
        yield page


def open_tools(page, url: str) -> None:
    page.set_default_timeout(UI_TIMEOUT_MS)
    page.goto(url)
    wait_engine_ready(page)
    page.get_by_role("tab", name="Tools").click()
    page.wait_for_selector("#m3-tools-message textarea")


def test_a_call_waiting_for_approval_has_approve_and_deny_on_screen_and_its_arguments_once(page):
    page.check("#m3-require-approval input")
    ask_only(page, WEATHER)
    page.wait_for_selector("#m3-approval", state="visible")
    page.wait_for_timeout(500)  # the bar has settled (a late layout change would move it)
    assert page.evaluate("window.scrollY") == 0  # nothing scrolled the page to get there
    for button in ("#m3-approve", "#m3-deny"):
        box = page.locator(button).bounding_box()
        assert box["y"] >= 0 and box["y"] + box["height"] <= LAPTOP[1], (button, box)
    shown = page.inner_text("#m3-tools-chatbot") + page.inner_text("#m3-approval")
    assert shown.count('"city": "Paris"') == 1, shown
    page.click("#m3-approve")
    wait_answered(page)
    expect(page.locator("#m3-tools-chatbot .message-content").last).to_contain_text("DEMO DATA")


def test_a_tool_chat_survives_a_reload_and_exports(page, app):
    ask(page, WEATHER)
    before = page.inner_text("#m3-tools-chatbot")
    assert "DEMO DATA" in before
    open_tools(page, app.url)
    chat = page.locator("#m3-tools-chatbot")
    expect(chat).to_contain_text(WEATHER)
    expect(chat).to_contain_text("Tool call: get_weather")
    expect(chat.locator(".message-content").last).to_contain_text("DEMO DATA")
    with page.expect_download() as download:
        page.click("#m3-tools-export-md")
    assert download.value.suggested_filename.endswith(".md")
    exported = Path(download.value.path()).read_text()
    assert WEATHER in exported and "get_weather" in exported and "DEMO DATA" in exported
    with page.expect_download() as download:
        page.click("#m3-tools-export-json")
    turns = json.loads(Path(download.value.path()).read_text())["turns"]
    assert turns[0]["content"] == WEATHER and any(turn.get("role") == "tool" for turn in turns)


def last_answer(page) -> str:
    return page.locator("#m3-tools-chatbot .message-content").last.inner_text()


def test_natural_requests_call_the_right_tools_and_get_sensible_answers(page):
    ask(page, "15% of 240, plus 12")
    chat = page.locator("#m3-tools-chatbot")
    expect(chat.locator(".thought-group", has_text="Tool call: calculator")).to_have_count(1)
    assert "48" in last_answer(page)
    page.click("#m3-tools-clear")
    ask(page, "9am in New York, what time in Tokyo?")
    assert re.search(r"9:00 AM in New York \(E[SD]T\) is \*?\*?1[01]:00 PM", last_answer(page)), last_answer(page)
    assert chat.locator(".thought-group", has_text="Tool call:").count() == 0  # no clock: the time is given
    page.click("#m3-tools-clear")
    ask(page, "Compare the weather in Tokyo and Oslo")
    expect(chat.locator(".thought-group", has_text="Tool call: get_weather")).to_have_count(2)
    assert re.search(r"Compared: Tokyo -?[\d.]+ °C, Oslo -?[\d.]+ °C\. \w+ is", last_answer(page)), last_answer(page)
    page.click("#m3-tools-clear")
    page.locator("#m3-tools-chatbot").scroll_into_view_if_needed()
    page.get_by_text("Custom tool (JSON schema + result template)").click()
    page.click("#m3-add-tool")
    expect(page.get_by_text("Added `lookup_order`").or_(page.get_by_text("Added lookup_order"))).to_be_visible()
    ask(page, "Where is my order A-1042?")
    answer = last_answer(page)
    assert "lookup_order" in answer and "A-1042" in answer and ".." not in answer, answer


def test_a_chat_message_holding_a_markdown_table_is_not_answered_as_arithmetic(page):
    page.get_by_role("tab", name="Chat").click()
    box = page.locator("#m3-message textarea")
    box.fill("Summarize this table:\n\n| Screen | Size |\n|---|---|\n| A | 1920x1080 |\n| B | 10-12 |")
    box.press("Enter")
    page.wait_for_function("document.querySelectorAll('#m3-chatbot .message-row.bot-row').length > 0")
    page.wait_for_selector("#m3-send", state="visible")
    page.wait_for_selector("#m3-stop", state="hidden")
    answer = page.locator("#m3-chatbot .message-content").last.inner_text()
    assert "2073600" not in answer and "-2" not in answer, answer
