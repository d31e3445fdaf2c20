"""The Tools tab in real Chromium against `python app.py` on the simulated engine: the weather call with its
arguments and result, and a final answer that uses it; Regenerate; handlers with nothing to do change nothing;
the stall limit is a setting checked before sending."""

from __future__ import annotations

import time

import pytest
from playwright.sync_api import expect

from tests.browser import ready_page

pytestmark = pytest.mark.browser
WEATHER = "What's the weather in Paris?"
CALL_BLOCKS = "#m3-tools-chatbot .thought-group"
# The buttons and their labels: a handler that blanks its outputs empties these.
BUTTONS = {"#m3-tools-send": "Send", "#m3-tools-regenerate": "↻ Regenerate", "#m3-tools-clear": "Clear"}


@pytest.fixture
def page(app):
    with ready_page(app.url) as page:
        page.get_by_role("tab", name="Tools").click()
        page.wait_for_selector("#m3-tools-message textarea")
        yield page


def ask(page, text: str) -> None:
    ask_only(page, text)
    wait_answered(page)


def ask_only(page, text: str) -> None:
    page.fill("#m3-tools-message textarea", text)
    page.keyboard.press("Enter")
    page.wait_for_selector("#m3-tools-stop", state="visible")


def wait_answered(page) -> None:
    page.wait_for_selector("#m3-tools-send", state="visible")
    page.wait_for_selector("#m3-tools-stop", state="hidden")


def settled_after(page, toast: str) -> None:
    """The handler warned `toast` and has finished (its outputs, if any, arrive with the toast's event)."""
    page.get_by_text(toast).first.wait_for()
    page.wait_for_timeout(1000)


def conversation(page) -> list[str]:
    """The text of each message shown (a reasoning block that folds meanwhile changes none of them)."""
    return [text.strip() for text in page.locator("#m3-tools-chatbot .message-content").all_inner_texts()]


def settled_conversation(page, quiet_ms: int = 1000, timeout_s: float = 30) -> list[str]:
    """The conversation once no message changed for `quiet_ms`: the answer's last frame (the reasoning of its final
    round) may land just after the buttons turned back."""
    deadline, last = time.monotonic() + timeout_s, conversation(page)
    while True:
        page.wait_for_timeout(quiet_ms)
        now = conversation(page)
        if now == last or time.monotonic() > deadline:
            return now
        last = now


def labels(page) -> dict[str, str]:
    return {selector: page.inner_text(selector).strip() for selector in BUTTONS}


def test_the_weather_call_shows_its_arguments_and_result_and_the_answer_uses_it(page):
    ask(page, WEATHER)
    chat = page.locator("#m3-tools-chatbot")
    call = chat.locator(".thought-group", has_text="Tool call: get_weather").first
    header = call.locator("[role=button]").first.inner_text()
    assert "done" in header
    call_text = call.inner_text()
    assert '"city": "Paris"' in call_text
    assert "Result" in call_text and "DEMO DATA" in call_text and "for Paris" in call_text
    answer = chat.locator(".message-content").last.inner_text()
    assert 'get_weather(city="Paris")' in answer and "DEMO DATA" in answer


def test_an_empty_send_leaves_the_buttons_and_the_conversation_as_they_were(page):
    ask(page, WEATHER)
    before = settled_conversation(page)
    page.fill("#m3-tools-message textarea", "   ")
    page.keyboard.press("Enter")
    settled_after(page, "Type a message first.")
    page.click("#m3-tools-send")
    page.wait_for_timeout(1000)
    assert labels(page) == BUTTONS
    assert conversation(page) == before and "DEMO DATA" in before[-1]


def test_regenerate_on_an_empty_chat_changes_nothing(page):
    page.click("#m3-tools-regenerate")
    settled_after(page, "Nothing to regenerate yet")
    assert labels(page) == BUTTONS
    expect(page.get_by_text("Tool calling demo")).to_be_visible()  # the chat's placeholder is still shown


def test_regenerate_replaces_the_last_answer_and_its_tool_calls(page):
    ask(page, WEATHER)
    page.click("#m3-tools-regenerate")
    page.wait_for_selector("#m3-tools-stop", state="visible")
    wait_answered(page)
    chat = page.locator("#m3-tools-chatbot")
    expect(chat.locator(".message-content").last).to_contain_text("DEMO DATA")
    assert chat.inner_text().count(WEATHER) == 1
    assert page.locator(CALL_BLOCKS, has_text="Tool call: get_weather").count() == 1
    assert labels(page) == BUTTONS


def test_the_stall_limit_is_a_visible_setting_and_a_bad_one_is_refused_before_sending(page):
    stall = page.locator("#m3-tools-stall input")
    expect(page.locator("#m3-tools-stall")).to_contain_text("Stall limit (s)")
    assert stall.input_value() == "60"
    stall.fill("0")
    page.fill("#m3-tools-message textarea", WEATHER)
    page.keyboard.press("Enter")
    settled_after(page, "stall_seconds must be in [1, 3600]")
    assert labels(page) == BUTTONS
    assert page.input_value("#m3-tools-message textarea") == WEATHER  # nothing typed is lost
    assert WEATHER not in page.inner_text("#m3-tools-chatbot")


def test_while_an_answer_runs_enter_queues_the_message_and_sends_it_after(page):
    page.check("#m3-require-approval input")  # the answer waits for an approval: it runs as long as we like
    ask_only(page, WEATHER)
    page.wait_for_selector("#m3-approval", state="visible")
    box = page.locator("#m3-tools-message textarea")
    expect(box).to_be_enabled()  # open, as in the Chat tab
    assert box.get_attribute("placeholder").startswith("An answer is running: Enter queues your message")
    box.fill("What is 6 * 7?")
    box.press("Enter")
    expect(page.locator("#m3-tools-queued")).to_contain_text("Queued")
    assert box.input_value() == "What is 6 * 7?"  # kept, not swallowed
    page.uncheck("#m3-require-approval input")  # the queued question's calculator call runs at once
    page.click("#m3-approve")
    chat = page.locator("#m3-tools-chatbot")
    expect(chat.locator(".message-row.user-row", has_text="What is 6 * 7?")).to_be_visible()
    wait_answered(page)
    expect(chat.locator(".message-content").last).to_contain_text("42")
    expect(page.locator("#m3-tools-queued")).to_be_hidden()
    assert box.get_attribute("placeholder").startswith("Ask something a tool can answer")


def test_the_chats_trash_button_while_an_answer_runs_keeps_stop_and_the_answer(page):
    page.check("#m3-require-approval input")
    ask_only(page, WEATHER)
    page.wait_for_selector("#m3-approval", state="visible")
    page.locator("#m3-tools-chatbot button[aria-label='Clear']").first.click()
    settled_after(page, "An answer is running: press Stop first")
    assert page.is_visible("#m3-tools-stop") and not page.is_visible("#m3-tools-send")
    page.click("#m3-approve")
    wait_answered(page)
    expect(page.locator("#m3-tools-chatbot .message-content").last).to_contain_text("DEMO DATA")
    assert WEATHER in page.inner_text("#m3-tools-chatbot")


def test_esc_stops_a_running_answer(page):
    page.check("#m3-require-approval input")
    ask_only(page, WEATHER)
    page.wait_for_selector("#m3-approval", state="visible")
    page.keyboard.press("Escape")
    wait_answered(page)
    expect(page.locator("#m3-tools-chatbot")).to_contain_text("Stopped")


def test_a_custom_tool_the_engine_would_refuse_is_refused_in_the_editor_with_the_reason(page):
    # sglang-kt checks every offered tool's parameters against JSON Schema Draft 2020-12 and fails the whole
    # chat otherwise (serving_chat._validate_request): the editor refuses such a tool before it is offered.
    page.get_by_text("Custom tool (JSON schema + result template)").click()
    editor = page.locator("#m3-custom-json .cm-content")
    editor.fill('{"name": "count_items", "parameters": {"type": "object", "properties": '
                '{"n": {"type": "int"}}}, "result_template": "$n items"}')
    page.click("#m3-add-tool")
    expect(page.get_by_text("the engine refuses this parameters schema")).to_be_visible()
    expect(page.get_by_text("'int' is not valid under any of the given schemas")).to_be_visible()
    expect(page.get_by_role("checkbox", name="count_items")).to_have_count(0)  # not offered to the model
    expect(page.get_by_role("checkbox", name="get_weather")).to_have_count(1)
