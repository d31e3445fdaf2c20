"""What the chat core puts on the page, in real Chromium against `python app.py` on the simulated engine: the
decode rate of a short answer is "—" rather than an absurd figure, a tool-call step shows its token counts and
timing like any answer, a question goes to the engine at the click (one request, taken by its answer), a lone
surrogate typed into the box neither breaks the turn nor the next one, Stop
during a tool approval is recorded as stopped (not denied), an engine killed mid-answer is explained once,
in plain words, with its diagnosis, and a chosen option keeps its mark under the mouse."""

from __future__ import annotations

import os
import re
import signal

import pytest

from launch.run_state import read_run_state
from tests.app_process import running_app
from tests.browser import UI_TIMEOUT_MS, chromium_page
from tests.test_browser_chat import engine_counter, engine_url, start_new_chat

pytestmark = pytest.mark.browser
RATE = re.compile(r"(—|[\d.]+) tok/s")


def ask(page, text: str, prefix: str = "m3") -> None:
    page.fill(f"#{prefix}-message textarea", text)
    send_and_wait(page, prefix)


def send_and_wait(page, prefix: str = "m3") -> None:
    page.keyboard.press("Enter")
    page.wait_for_selector(f"#{prefix}-stop", state="visible")
    page.wait_for_selector(f"#{prefix}-send", state="visible")
    page.wait_for_selector(f"#{prefix}-stop", state="hidden")


def rates(page, chatbot: str = "#m3-chatbot") -> list[str]:
    return [RATE.search(text).group(1) for text in page.locator(f"{chatbot} .m3-stats").all_inner_texts()]


def test_a_two_token_answer_shows_a_dash_for_its_rate_and_a_long_one_a_figure(page):
    ask(page, "Count to 1")
    assert rates(page) == ["—"]
    ask(page, "Count to 120")
    short, long = rates(page)
    assert short == "—" and 1 < float(long) < 5000, long


def test_send_hands_the_question_to_the_engine_at_the_click_and_its_answer_takes_that_very_request(page):
    url = engine_url(page)
    counts = [engine_counter(url, name) for name in ("num_requests_total", "num_aborted_requests_total")]
    start_new_chat(page)
    sent = []
    for question in ("Count to 5", "Count to 7"):  # a new chat, then a question that follows up in it
        page.fill("#m3-message textarea", question)
        with page.expect_response(lambda response: response.url.endswith("/ask")) as asked:
            send_and_wait(page)
        sent.append(asked.value.json()["sent"])
    assert any(sent), "sent early (not when a busy machine delays the page's ask past its answer's start)"
    answers = page.locator("#m3-chatbot .message-content").all_inner_texts()
    assert any(text.startswith("1, 2, 3, 4, 5.") for text in answers), answers
    assert any(text.startswith("1, 2, 3, 4, 5, 6, 7.") for text in answers), answers
    requests, aborted = (engine_counter(url, name) for name in ("num_requests_total", "num_aborted_requests_total"))
    # One request answered each question; one sent early that its answer did not take (it started first, on a
    # busy machine) was stopped, never run to its end.
    assert requests - counts[0] - (aborted - counts[1]) == 2, (requests - counts[0], aborted - counts[1])


RADIO_LOOK = """(value) => {
  const style = getComputedStyle(document.querySelector(`.m3-thinking-mode input[value=${value}]`));
  return [style.backgroundColor, style.borderColor, style.backgroundImage.startsWith('url(')];
}"""


def test_the_chosen_thinking_mode_keeps_its_mark_while_the_mouse_is_on_it(page):
    modes = page.locator(".m3-thinking-mode")
    modes.get_by_label("Enabled", exact=True).check()
    page.locator("#m3-message textarea").click()  # the focus moves on, as it does when one types the question
    page.mouse.move(1, 1)
    chosen = page.evaluate(RADIO_LOOK, "enabled")
    assert chosen[2], "a chosen option shows its dot"
    modes.get_by_label("Enabled", exact=True).hover()
    assert page.evaluate(RADIO_LOOK, "enabled") == chosen  # Gradio's hover colours outranked the chosen ones


def test_a_tool_call_step_shows_its_token_counts_and_timing(page):
    page.get_by_role("tab", name="Tools").click()
    page.wait_for_selector("#m3-tools-message textarea")
    ask(page, "What's the weather in Paris?", "m3-tools")
    figures = page.locator("#m3-tools-chatbot .m3-stats").all_inner_texts()
    assert len(figures) == 2, figures  # the tool-call step's, then the answer's
    assert re.search(r"TTFT [\d.]+ s · .* → \d+ tokens", figures[0]), figures[0]


def test_a_lone_surrogate_typed_is_shown_replaced_and_the_next_send_still_works(page):
    box = page.locator("#m3-message textarea")
    box.evaluate("(el) => { el.value = 'x \\ud83d y'; el.dispatchEvent(new Event('input', {bubbles: true})); }")
    box.focus()
    send_and_wait(page)
    ask(page, "Count to 3")
    text = page.inner_text("#m3-chatbot")
    assert "1, 2, 3." in text and "Error" not in text
    assert re.search(r"x [\ufffd?] y", text), text


def test_stop_during_an_approval_is_recorded_as_stopped_not_denied(page):
    page.get_by_role("tab", name="Tools").click()
    page.wait_for_selector("#m3-tools-message textarea")
    page.locator("#m3-require-approval input").check()
    page.fill("#m3-tools-message textarea", "What's the weather in Paris?")
    page.keyboard.press("Enter")
    page.wait_for_selector("#m3-approval", state="visible")
    page.click("#m3-tools-stop")
    page.wait_for_selector("#m3-tools-send", state="visible")
    page.wait_for_selector("#m3-tools-stop", state="hidden")
    chat = page.inner_text("#m3-tools-chatbot")
    assert "stopped by the user before it ran" in chat and "denied" not in chat, chat


def test_an_engine_killed_mid_answer_is_explained_once_with_its_diagnosis(tmp_path):
    with running_app(tmp_path, env={"M3UI_SIM_DECODE_TPS": "40"}) as app, chromium_page() as page:
        page.set_default_timeout(UI_TIMEOUT_MS)
        page.goto(app.url)
        page.wait_for_function("document.querySelector('#m3-header')?.innerText.includes('ready')")
        page.fill("#m3-message textarea", "Count to 400")
        page.keyboard.press("Enter")
        page.wait_for_function("document.querySelector('#m3-chatbot').innerText.includes('1, 2, 3')")
        os.kill(read_run_state(app.data_dir).pid, signal.SIGKILL)
        page.wait_for_selector("#m3-stop", state="hidden")
        chat = page.inner_text("#m3-chatbot")
    assert chat.count("The answer broke off because the engine stopped. The engine was killed by SIGKILL") == 1, chat
    assert "chunked" not in chat and "broke off: the stream broke off" not in chat
    assert "press Regenerate once the engine is ready again" in chat
