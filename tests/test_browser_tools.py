"""The Tools tab in real Chromium against `python app.py` on the simulated engine: the weather call with its
arguments and result, and a final answer that uses it."""

from __future__ import annotations

import pytest

from tests.app_process import running_app
from tests.browser import chromium_page
from tests.test_browser_chat import wait_engine_ready

pytestmark = pytest.mark.browser


def test_the_weather_call_shows_its_arguments_and_result_and_the_answer_uses_it(tmp_path):
    with running_app(tmp_path) as app, chromium_page() as page:
        page.set_default_timeout(60_000)
        page.goto(app.url)
        wait_engine_ready(page)
        page.get_by_role("tab", name="Tools").click()
        page.fill("#m3-tools-message textarea", "What's the weather in Paris?")
        page.keyboard.press("Enter")
        page.wait_for_selector("#m3-tools-stop", state="visible")
        page.wait_for_selector("#m3-tools-send", state="visible")
        chat = page.locator("#m3-tools-chatbot")
        call = chat.locator(".thought-group", has_text="Tool call: get_weather").first
        header = call.locator("[role=button]").first.inner_text()
        assert "done" in header
        call_text = call.inner_text()
        assert '"city": "Paris"' in call_text
        assert "Result" in call_text and "DEMO DATA" in call_text and "for Paris" in call_text
        answer = chat.locator(".message-content").last.inner_text()
        assert 'get_weather(city="Paris")' in answer and "DEMO DATA" in answer
