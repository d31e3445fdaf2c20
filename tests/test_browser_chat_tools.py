"""Tools inside ordinary chats (issue 26's habit) in real Chromium against `python app.py` on the simulated engine:
with the chat's Tools switch on, a weather question makes a get_weather call shown in the chat (name, arguments,
result) and the answer uses it; with it off the engine gets no tools (the sim, offered none, says it cannot answer);
each chat keeps its own switch, and its tool calls, across a reload."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.browser
SWITCH = "#m3-chat-tools input[type=checkbox]"
CHAT = "#m3-chatbot"


def ask(page: Page, text: str) -> None:
    page.fill("#m3-message textarea", text)
    page.keyboard.press("Enter")
    page.wait_for_selector("#m3-stop", state="visible")
    page.wait_for_selector("#m3-send", state="visible")
    page.wait_for_selector("#m3-stop", state="hidden")


def weather_call(page: Page):
    return page.locator(CHAT).locator(".thought-group", has_text="Tool call: get_weather").first


def pick(page: Page, title: str) -> None:
    page.locator("#m3-chat-list label", has_text=title).click()
    expect(page.locator("#m3-chat-title textarea, #m3-chat-title input")).to_have_value(title)


def test_a_chat_with_tools_on_calls_get_weather_and_each_chat_keeps_its_switch_across_a_reload(page: Page) -> None:
    switch = page.locator(SWITCH)
    expect(switch).not_to_be_checked()  # off until switched on
    switch.check()
    ask(page, "What's the weather in Tokyo?")
    call = weather_call(page)
    expect(call).to_contain_text("done")
    call_text = call.inner_text()
    assert '"city": "Tokyo"' in call_text
    assert "Result" in call_text and "DEMO DATA" in call_text and "for Tokyo" in call_text
    answer = page.locator(f"{CHAT} .message-content").last.inner_text()
    assert 'get_weather(city="Tokyo")' in answer and "DEMO DATA" in answer

    page.locator("#m3-new-chat").click()
    switch.uncheck()
    ask(page, "What's the weather in Oslo?")
    expect(page.locator(f"{CHAT} .message.bot").last).to_contain_text("can't really answer")  # offered no tools
    expect(page.locator(CHAT)).not_to_contain_text("Tool call")

    page.reload()
    page.wait_for_selector("#m3-message textarea")
    pick(page, "What's the weather in Oslo?")
    expect(switch).not_to_be_checked()
    pick(page, "What's the weather in Tokyo?")
    expect(switch).to_be_checked()
    expect(weather_call(page)).to_contain_text("done")  # the tool chat survived the reload, calls and all
    expect(page.locator(f"{CHAT} .message-content").last).to_contain_text('get_weather(city="Tokyo")')
