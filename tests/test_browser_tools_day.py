"""The Tools tab as a person uses it, in real Chromium against `python app.py` on the simulated engine: a call that
waits for approval has Approve and Deny on screen at 1440×900 and its arguments shown once; the tool chat survives
a reload and exports; a message sent while an answer streams is queued, as in the Chat tab."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.app_process import running_app
from tests.browser import chromium_page
from tests.test_browser_chat import wait_engine_ready
from tests.test_browser_tools import WEATHER, ask, ask_only, wait_answered

pytestmark = pytest.mark.browser
UI_TIMEOUT_MS = 60_000
LAPTOP = (1440, 900)


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    with running_app(tmp_path_factory.mktemp("tools-day")) as app:
        yield app


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
