"""What a look at every tab found (issue 26, "fix what looks wrong"), in real Chromium against `python app.py` on
the simulated engine: a question and its answer fit the chat box at 1440x900 without scrolling the question away;
the chat box's own buttons have a strip of their own, so on a phone they cover no message at any scroll; Continue
hides while a new answer streams; Regenerate, Continue and Clear share one row on a phone; the Tools tab's step
limit and tool timeout put their number boxes level."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from scripts.screenshots import REASONING_QUESTION
from tests.browser import chromium_page, open_tab
from tests.test_browser_chat import ask, open_chat

pytestmark = pytest.mark.browser
PHONE = (390, 844)
BOX = """(id) => { const wrap = document.querySelector(id + ' .bubble-wrap');
  return {scrollTop: wrap.scrollTop, overflow: wrap.scrollHeight - wrap.clientHeight}; }"""
# The buttons' strip and the scrolling messages' box, with the box scrolled to its end (where Gradio leaves it).
STRIP_AND_MESSAGES = """() => { const wrap = document.querySelector('#m3-chatbot .bubble-wrap');
  wrap.scrollTop = wrap.scrollHeight;
  const box = (e) => e.getBoundingClientRect().toJSON();
  return [box(document.querySelector('#m3-chatbot .top-panel')), box(wrap)]; }"""
# At the moment Stop appears (the page turned busy): whether Continue is still offered.
CONTINUE_WHEN_BUSY = """() => document.querySelector('#m3-stop')
  ? {continueShown: !!document.querySelector('#m3-continue')} : null"""


def test_a_question_and_its_answer_fit_the_chat_box_at_1440x900(app):
    with chromium_page((1440, 900)) as page:
        open_chat(page, app.url)
        ask(page, REASONING_QUESTION)  # a question, a folded reasoning block and a five-line answer with stats
        page.wait_for_timeout(500)  # (Gradio scrolls the box after the last frame)
        assert page.evaluate(BOX, "#m3-chatbot") == {"scrollTop": 0, "overflow": 0}
        expect(page.locator("#m3-chatbot .message-row.user-row")).to_be_in_viewport()


def test_on_a_phone_the_chat_boxs_buttons_cover_no_message_at_any_scroll(app):
    with chromium_page(PHONE) as page:
        open_chat(page, app.url)
        ask(page, REASONING_QUESTION)  # taller than a phone's chat box: it scrolls
        strip, messages = page.evaluate(STRIP_AND_MESSAGES)
        assert strip["bottom"] <= messages["top"] + 0.5, (strip, messages)


def test_continue_hides_while_a_new_answer_streams_and_comes_back_after_a_cut(app):
    with chromium_page((1440, 900)) as page:
        open_chat(page, app.url)
        page.fill("#m3-max-tokens input", "40")
        ask(page, "count to 200")
        cont = page.locator("#m3-continue")
        expect(cont).to_be_visible()  # cut at max tokens
        page.locator("#m3-message textarea").fill("count to 200")
        page.keyboard.press("Enter")
        busy = page.wait_for_function(CONTINUE_WHEN_BUSY, polling="raf").json_value()
        assert busy == {"continueShown": False}
        expect(page.locator("#m3-send")).to_be_visible()
        expect(cont).to_be_visible()  # this answer was cut too


def test_on_a_phone_regenerate_continue_and_clear_share_one_row(app):
    with chromium_page(PHONE) as page:
        open_chat(page, app.url)
        page.fill("#m3-max-tokens input", "40")
        ask(page, "count to 200")
        expect(page.locator("#m3-continue")).to_be_visible()
        boxes = [page.locator(f"#m3-{name}").bounding_box() for name in ("regenerate", "continue", "clear")]
        assert len({round(box["y"]) for box in boxes}) == 1, boxes
        assert all(box["x"] + box["width"] <= PHONE[0] for box in boxes), boxes


@pytest.mark.parametrize("viewport", [(1440, 900), PHONE])
def test_the_tools_step_limit_and_timeout_put_their_number_boxes_level(app, viewport):
    with chromium_page(viewport) as page:
        open_chat(page, app.url)
        open_tab(page, "Tools")
        offsets = []
        for slider in ("#m3-tools-max-steps", "#m3-tools-timeout"):
            block = page.locator(slider).bounding_box()
            number = page.locator(f"{slider} input[type=number]").bounding_box()
            assert number["x"] + number["width"] <= block["x"] + block["width"], slider
            offsets.append(round(number["y"] - block["y"]))
        assert offsets[0] == offsets[1], offsets
