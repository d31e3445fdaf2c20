"""Issue 26 in real Chromium against `python app.py` with accounts: a quota refusal is a "refused" note without a
retry control (defect 7); Continue appends to an answer cut at max tokens; Regenerate keeps the answer it replaces
(‹ n/N ›), saved with the chat; each message shows when it was written on hover."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from m3ui.accounts import AccountStore
from m3ui.accounts.usage import AnswerUsage, UsageLedger
from tests.app_process import running_app
from tests.browser import UI_TIMEOUT_MS, chromium_page

pytestmark = pytest.mark.browser
BOB = ("bob", "bobs-password")  # his daily quota is used up
ALICE = ("alice", "alices-password")
QUOTA = 1_000


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    folder = tmp_path_factory.mktemp("chat-habits")
    store = AccountStore.open(folder / "data")
    store.add(*BOB)
    store.add(*ALICE)
    store.set_quota(BOB[0], QUOTA)
    UsageLedger(store).record(BOB[0], AnswerUsage(prompt_tokens=QUOTA, completion_tokens=10, engine_seconds=1.0))
    store.close()
    with running_app(folder, data_dir=folder / "data") as running:
        running.wait_engine_ready()
        yield running


def signed_in(page: Page, url: str, who: tuple[str, str]) -> None:
    page.set_default_timeout(UI_TIMEOUT_MS)
    page.goto(url + "/")
    page.locator("input[type=password]").wait_for()
    page.locator("input[type=text]").fill(who[0])
    page.locator("input[type=password]").fill(who[1])
    page.keyboard.press("Enter")
    page.locator("#m3-message textarea").wait_for()


def ask(page: Page, text: str) -> None:
    page.locator("#m3-message textarea").fill(text)
    page.keyboard.press("Enter")


def test_a_quota_refusal_is_a_refused_note_in_the_quotas_words_with_no_retry(app) -> None:
    with chromium_page((1440, 900)) as page:
        signed_in(page, app.url, BOB)
        ask(page, "Are you there?")
        bot = page.locator("#m3-chatbot .message.bot").last
        expect(bot).to_contain_text("Refused")
        expect(bot).to_contain_text("Daily token quota reached")
        expect(bot).to_contain_text("resets at 00:00 UTC")
        expect(bot).not_to_contain_text("Error")
        expect(page.locator("#m3-chatbot button[aria-label=Retry]")).to_be_hidden()


def test_continue_after_a_length_cut_appends_to_the_answer(app) -> None:
    with chromium_page((1440, 900)) as page:
        signed_in(page, app.url, ALICE)
        cont = page.locator("#m3-continue")
        page.fill("#m3-max-tokens input", "40")
        ask(page, "count to 200")
        bot = page.locator("#m3-chatbot .message.bot")
        expect(page.locator("#m3-chatbot")).to_contain_text("Cut off")
        expect(cont).to_be_visible()
        cut = bot.first.inner_text()
        assert cut.startswith("1, 2, 3") and "200." not in cut
        page.fill("#m3-max-tokens input", "4096")
        cont.click()
        expect(bot.first).to_contain_text("199, 200.")
        answer = bot.first.inner_text()
        assert answer.startswith("1, 2, 3") and answer.count("1, 2, 3,") == 1, "appended, not started over"
        expect(page.locator("#m3-chatbot")).not_to_contain_text("Cut off")
        expect(cont).to_be_hidden()
        page.reload()  # saved whole
        expect(page.locator("#m3-chatbot .message.bot").first).to_contain_text("199, 200.")


def test_regenerate_keeps_both_answers_with_arrows_and_a_reload_keeps_them(app) -> None:
    with chromium_page((1440, 900)) as page:
        signed_in(page, app.url, ALICE)
        page.locator("#m3-new-chat").click()
        page.fill("#m3-max-tokens input", "4096")  # (the form opens with the last chat's settings)
        ask(page, "count to 12")
        answer = page.locator("#m3-chatbot .message.bot").first
        expect(answer).to_contain_text("11, 12.")
        expect(page.locator("#m3-send")).to_be_visible()
        page.fill("#m3-max-tokens input", "6")  # the second answer differs: cut short
        page.locator("#m3-regenerate").click()
        label = page.locator("#m3-version-label")
        expect(label).to_have_text("2/2")
        expect(answer).not_to_contain_text("11, 12.")
        page.locator("#m3-version-prev").click()
        expect(label).to_have_text("1/2")
        expect(answer).to_contain_text("11, 12.")
        page.reload()
        expect(page.locator("#m3-version-label")).to_have_text("1/2")
        expect(page.locator("#m3-chatbot .message.bot").first).to_contain_text("11, 12.")
        page.locator("#m3-version-next").click()
        expect(page.locator("#m3-version-label")).to_have_text("2/2")
        expect(page.locator("#m3-chatbot .message.bot").first).not_to_contain_text("11, 12.")


def test_each_message_shows_when_it_was_written_on_hover(app) -> None:
    with chromium_page((1440, 900)) as page:
        signed_in(page, app.url, ALICE)
        page.locator("#m3-new-chat").click()
        page.fill("#m3-max-tokens input", "4096")
        ask(page, "count to 3")
        expect(page.locator("#m3-chatbot .message.bot").first).to_contain_text("1, 2, 3.")
        rows = page.locator("#m3-chatbot .message-row")
        expect(rows).to_have_count(2)
        time_shown = re.compile(r"\b\d{1,2}:\d{2}\b")  # in the reader's locale: "Dec 4, 2026, 8:41 PM"
        for i in range(2):
            expect(rows.nth(i)).to_have_attribute("title", time_shown)
        rows.first.hover()
        page.reload()  # kept with the chat
        expect(page.locator("#m3-chatbot .message-row").first).to_have_attribute("title", time_shown)
