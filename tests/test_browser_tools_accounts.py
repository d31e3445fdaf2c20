"""The Tools tab's chat under accounts, in real Chromium against `python app.py` on the simulated engine: it is kept
on the server for the signed-in person, not in the browser. It survives a reload, follows them to another device
(a browser context with its own storage), exports, and is in their chat list; another account never sees it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.app_process import running_app_with_accounts
from tests.browser import shared_browser
from tests.test_browser_accounts import sign_in
from tests.test_browser_tools import WEATHER, ask

pytestmark = pytest.mark.browser
BOB = ("bob", "bobs-password")
CAROL = ("carol", "carols-password")
UI_TIMEOUT_MS = 60_000


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    with running_app_with_accounts(tmp_path_factory.mktemp("browser-tools-accounts"), BOB, CAROL) as running:
        yield running


@pytest.fixture
def devices():
    """A function giving a new page in a new browser context (a device of its own: own cookies and storage)."""
    browser, contexts = shared_browser(), []

    def device():
        contexts.append(browser.new_context(viewport={"width": 1440, "height": 900}))
        page = contexts[-1].new_page()
        page.set_default_timeout(UI_TIMEOUT_MS)
        return page

    yield device
    for context in contexts:
        context.close()


def open_tools(page) -> None:
    page.get_by_role("tab", name="Tools").click()
    page.wait_for_selector("#m3-tools-message textarea")


def test_a_tool_chat_is_kept_on_the_server_for_its_person_only(app, devices):
    url = app.url + "/"
    laptop, phone, carols = devices(), devices(), devices()
    sign_in(laptop, url, *BOB)
    open_tools(laptop)
    ask(laptop, WEATHER)
    assert "DEMO DATA" in laptop.inner_text("#m3-tools-chatbot")
    assert laptop.evaluate("localStorage.getItem('m3ui-tools-chat')") is None  # not in the browser

    laptop.reload()
    laptop.wait_for_selector("#m3-message textarea")
    open_tools(laptop)
    chat = laptop.locator("#m3-tools-chatbot")
    expect(chat).to_contain_text(WEATHER)
    expect(chat).to_contain_text("Tool call: get_weather")
    expect(chat.locator(".message-content").last).to_contain_text("DEMO DATA")
    with laptop.expect_download() as download:
        laptop.click("#m3-tools-export-json")
    turns = json.loads(Path(download.value.path()).read_text())["turns"]
    assert turns[0]["content"] == WEATHER and any(turn.get("role") == "tool" for turn in turns)

    sign_in(phone, url, *BOB)  # another device: its own, empty storage
    expect(phone.locator("#m3-chat-list")).to_contain_text(WEATHER)  # among his saved chats
    open_tools(phone)
    expect(phone.locator("#m3-tools-chatbot")).to_contain_text("Tool call: get_weather")

    sign_in(carols, url, *CAROL)
    carols.wait_for_timeout(1500)  # the load events have filled the chat list and the tool chat
    open_tools(carols)
    carols.wait_for_timeout(500)
    assert WEATHER not in carols.inner_text("#m3-tools-chatbot")
    assert WEATHER not in carols.inner_text("#m3-chat-list") and "DEMO DATA" not in carols.content()


def test_clear_empties_the_kept_tool_chat(app, devices):
    url = app.url + "/"
    page = devices()
    sign_in(page, url, *CAROL)
    open_tools(page)
    ask(page, "Use the calculator: (17 * 23 + 4) / 3")
    page.click("#m3-tools-clear")
    expect(page.locator("#m3-tools-chatbot")).not_to_contain_text("calculator")
    page.wait_for_timeout(500)
    page.reload()
    page.wait_for_selector("#m3-message textarea")
    open_tools(page)
    page.wait_for_timeout(1500)
    assert "17 * 23" not in page.inner_text("#m3-tools-chatbot")
    assert "17 * 23" not in page.inner_text("#m3-chat-list")
