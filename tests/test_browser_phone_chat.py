"""The Chat tab on a phone's 390×844 in real Chromium against `python app.py` on the simulated engine: the empty
chat's message box lies inside the screen, the empty state does not point "on the right", the header is not cut
off, the chat box's own buttons do not cover the first message, and the chats drawer has a close button and a
backdrop that closes it."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser import chromium_page
from tests.test_browser_chat import ask, open_chat

pytestmark = pytest.mark.browser
PHONE = (390, 844)
# Whether an element's text is cut (an ellipsis or a hidden overflow hides part of it).
CUT = "(element) => element.scrollWidth > element.clientWidth + 1"
FIRST_BUBBLE_AND_BUTTONS = """() => {
  document.querySelector('#m3-chatbot .bubble-wrap').scrollTop = 0;
  const box = (selector) => document.querySelector(selector).getBoundingClientRect().toJSON();
  return [box('#m3-chatbot .message-row'), box('#m3-chatbot .top-panel')];
}"""


@pytest.fixture
def page(app):
    with chromium_page(PHONE) as page:
        open_chat(page, app.url)
        yield page


def inside_screen(box: dict[str, float]) -> bool:
    return box["x"] >= 0 and box["y"] >= 0 and box["x"] + box["width"] <= PHONE[0] \
        and box["y"] + box["height"] <= PHONE[1]


def test_the_empty_chats_message_box_lies_inside_the_screen_and_the_empty_state_fits_a_phone(page):
    assert page.evaluate("window.scrollY") == 0
    for part in ("#m3-message", "#m3-send"):
        assert inside_screen(page.locator(part).bounding_box()), part
    empty = page.locator("#m3-chatbot .placeholder")
    expect(empty).to_contain_text("Thinking mode")
    assert "on the right" not in empty.inner_text()  # the settings are below the chat on a phone


def test_the_header_is_not_cut_off(page):
    for part in ("#m3-header .m3-title", "#m3-header .m3-status"):
        assert not page.locator(part).evaluate(CUT), page.locator(part).inner_text()
        assert inside_screen(page.locator(part).bounding_box()), part


def test_the_chat_boxs_buttons_do_not_cover_the_first_message(page):
    ask(page, "A question long enough to fill the bubble's width on a phone screen, over a few lines of text")
    bubble, buttons = page.evaluate(FIRST_BUBBLE_AND_BUTTONS)
    assert bubble["right"] > buttons["left"], (bubble, buttons)  # the bubble reaches under the buttons' corner…
    assert bubble["top"] >= buttons["bottom"] + 4, (bubble, buttons)  # …so it starts below them, clear of them


def test_the_chats_drawer_closes_with_its_button_and_a_tap_on_its_backdrop(page):
    page.click("#m3-chats-toggle")
    expect(page.locator("#m3-chat-list")).to_be_visible()
    page.click("#m3-chats-close")
    expect(page.locator("#m3-chat-list")).to_be_hidden()
    page.click("#m3-chats-toggle")
    expect(page.locator("#m3-chat-list")).to_be_visible()
    backdrop = page.locator("#m3-drawer-backdrop")
    expect(backdrop).to_be_visible()
    assert backdrop.bounding_box()["width"] >= PHONE[0] and backdrop.bounding_box()["height"] >= PHONE[1]
    page.mouse.click(PHONE[0] - 15, PHONE[1] // 2)  # beside the drawer, on the backdrop
    expect(page.locator("#m3-chat-list")).to_be_hidden()
    expect(backdrop).to_be_hidden()
