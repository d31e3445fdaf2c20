"""The signed-in side as people see it, in real Chromium against `python app.py` with accounts: the login page
carries the app's name and the theme toggle, says "Wrong user name or password." and keeps the user name after a
failure; the Account tab says how much of the daily quota is left and warns near the limit; on a phone the Account
usage table and the admin's Users table scroll sideways inside their box, with a hint."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from m3ui.accounts import AccountStore
from m3ui.accounts.usage import AnswerUsage, UsageLedger
from tests.app_process import running_app
from tests.browser import chromium_page, open_tab

pytestmark = pytest.mark.browser
BOB = ("bob", "bobs-password")
ALICE = ("alice", "alices-password")
QUOTA = 10_000
USED = 8_500  # past 80 % of the quota: the Account tab warns
PHONE = (390, 844)
UI_TIMEOUT_MS = 60_000


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    folder = tmp_path_factory.mktemp("accounts-look")
    store = AccountStore.open(folder / "data")
    store.add(*BOB)
    store.add(*ALICE, "admin")
    store.set_quota(BOB[0], QUOTA)
    UsageLedger(store).record(BOB[0], AnswerUsage(prompt_tokens=USED - 500, completion_tokens=500, engine_seconds=1.0))
    store.close()
    with running_app(folder, data_dir=folder / "data") as running:
        yield running


def sign_in(page, url: str, user: str, password: str) -> None:
    page.goto(url)
    page.locator("input[type=password]").wait_for()
    page.locator("input[type=text]").fill(user)
    page.locator("input[type=password]").fill(password)
    page.keyboard.press("Enter")


def test_the_login_page_has_the_name_a_theme_toggle_a_clear_refusal_and_keeps_the_user_name(app) -> None:
    with chromium_page(PHONE) as page:
        page.set_default_timeout(UI_TIMEOUT_MS)
        sign_in(page, app.url + "/", BOB[0], "not-the-password")
        expect(page.get_by_role("alert")).to_have_text("Wrong user name or password.")
        expect(page.locator(".m3-login-head")).to_contain_text("m3ui · MiniMax-M3")
        expect(page.locator("input[type=text]")).to_have_value(BOB[0])
        toggle = page.locator(".m3-login-head .m3-theme-toggle")
        expect(toggle).to_have_accessible_name("☾ Dark")
        toggle.click()
        assert page.evaluate("document.documentElement.classList.contains('dark')")
        page.locator("input[type=password]").fill(BOB[1])  # the kept name is the form's: only the password again
        page.keyboard.press("Enter")
        page.locator("#m3-message textarea").wait_for()


def test_the_account_tab_says_how_much_quota_is_left_and_warns_near_the_limit(app) -> None:
    with chromium_page((1440, 900)) as page:
        page.set_default_timeout(UI_TIMEOUT_MS)
        sign_in(page, app.url + "/", *BOB)
        page.get_by_role("tab", name="Account").click()
        left = page.locator("#m3-account-usage .m3-quota")
        expect(left).to_have_attribute("data-quota", "near")
        expect(left).to_contain_text(f"Only {QUOTA - USED:,} of your {QUOTA:,} daily tokens are left today")


def readable(page, selector: str) -> str:
    """'scrolls' when the table sits in a box that scrolls sideways and is wider than it; else where it ends."""
    return page.evaluate("""(selector) => { const table = document.querySelector(selector);
      const box = table.closest('.m3-wide-table');
      if (box && getComputedStyle(box).overflowX === 'auto' && table.scrollWidth > box.clientWidth) return 'scrolls';
      return table.getBoundingClientRect().right <= window.innerWidth + 1 ? 'fits' : 'cut off'; }""", selector)


def test_wide_tables_scroll_sideways_on_a_phone_with_a_hint(app) -> None:
    with chromium_page(PHONE) as page:
        page.set_default_timeout(UI_TIMEOUT_MS)
        sign_in(page, app.url + "/", *BOB)
        open_tab(page, "Account")
        page.wait_for_selector("#m3-account-usage table")
        assert readable(page, "#m3-account-usage table") in ("scrolls", "fits")
        expect(page.locator("#m3-account-usage .m3-scroll-hint")).to_be_visible()

        page.set_viewport_size({"width": 1440, "height": 900})  # on a phone Gradio folds most tabs into a menu
        sign_in(page, app.url + "/admin/", *ALICE)
        page.get_by_role("tab", name="Users").click()
        page.wait_for_selector("#m3-users-table table")
        page.set_viewport_size({"width": PHONE[0], "height": PHONE[1]})
        assert readable(page, "#m3-users-table table") == "scrolls"
        hint = page.locator("#m3-users-table .m3-scroll-hint")
        expect(hint).to_be_visible()
        expect(hint).to_have_text(re.compile("Swipe sideways"))
