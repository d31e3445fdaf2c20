"""Chats kept on the server, in a real browser: bob signs in on two devices (two browser contexts, each its own
storage): a chat sent on one appears on the other after a reload, and an answer added there appears back on the
first; carol never sees it. Carol's chats kept in her browser before she had an account are offered for import
once, and imported into her account only."""

from __future__ import annotations

import json
import time

import pytest

from m3ui.conversation import Conversation
from m3ui.conversation.library import chat_record, new_chat
from tests.app_process import running_app_with_accounts
from tests.browser import shared_browser
from tests.test_browser_accounts import sign_in

pytestmark = pytest.mark.browser
BOB = ("bob", "bobs-password")
CAROL = ("carol", "carols-password")


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    with running_app_with_accounts(tmp_path_factory.mktemp("browser-server-chats"), BOB, CAROL) as running:
        yield running


@pytest.fixture
def devices():
    """A function giving a new page in a new browser context (a device of its own: own cookies and storage)."""
    browser, contexts = shared_browser(), []

    def device():
        contexts.append(browser.new_context(viewport={"width": 1280, "height": 900}))
        return contexts[-1].new_page()

    yield device
    for context in contexts:
        context.close()


def send(page, text: str) -> None:
    box = page.locator("#m3-message textarea")
    box.fill(text)
    box.press("Enter")
    page.locator("#m3-stop").wait_for(state="visible", timeout=30_000)
    page.locator("#m3-stop").wait_for(state="hidden", timeout=90_000)


def chat_list(page) -> str:
    page.locator("#m3-chat-list").wait_for(timeout=30_000)
    return page.locator("#m3-chat-list").inner_text()


def reload(page) -> None:
    page.reload()
    page.locator("#m3-message textarea").wait_for(timeout=30_000)
    time.sleep(1.5)  # the load event fills the list


def test_a_chat_follows_its_person_to_another_device_and_no_one_else(app, devices):
    url = app.url + "/"
    laptop, phone, carols = devices(), devices(), devices()
    sign_in(laptop, url, *BOB)
    sign_in(phone, url, *BOB)
    sign_in(carols, url, *CAROL)
    send(laptop, "Bob's laptop question: what is 2+2?")
    reload(phone)
    assert "Bob's laptop question" in chat_list(phone)
    phone.locator("#m3-chat-list label", has_text="Bob's laptop question").click()
    phone.get_by_text("what is 2+2?").first.wait_for(timeout=15_000)
    send(phone, "And from the phone: what is 3+3?")
    reload(laptop)
    laptop.locator("#m3-chat-list label", has_text="Bob's laptop question").click()
    laptop.get_by_text("from the phone").first.wait_for(timeout=15_000)
    reload(carols)
    assert "Bob's" not in chat_list(carols) and "Bob's" not in carols.content()


def test_browser_chats_are_offered_for_import_once(app, devices):
    url = app.url + "/"
    page = devices()
    page.goto(url)
    page.locator("input[type=password]").wait_for(timeout=30_000)
    record = chat_record(new_chat().with_conversation(Conversation().ask("Carol's old local chat")))
    page.evaluate("([key, value]) => localStorage.setItem(key, value)",
                  [f"m3ui-chat:{record['id']}", json.dumps(record)])
    sign_in(page, url, *CAROL)
    offer = page.locator("#m3-chat-import")
    offer.wait_for(state="visible", timeout=30_000)
    assert "1 chat" in offer.inner_text()
    assert "Carol's old local chat" not in chat_list(page)  # not mixed in before she says yes
    page.locator("#m3-chat-import-yes").click()
    page.locator("#m3-chat-list label", has_text="Carol's old local chat").wait_for(timeout=30_000)
    reload(page)
    assert not offer.is_visible()  # once: it is in her account now
    assert "Carol's old local chat" in chat_list(page)
    bobs = devices()
    sign_in(bobs, url, *BOB)
    time.sleep(1.5)
    assert "Carol's old local chat" not in chat_list(bobs)
