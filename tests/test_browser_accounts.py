"""Accounts in a real browser: a user signs in, chats, sees their own usage in the Account tab and signs out; a
user disabled while the page is open is shown the login form within seconds, without touching the page."""

from __future__ import annotations

import time

import pytest

from m3ui.accounts import AccountStore
from tests.app_process import running_app
from tests.browser import chromium_page

pytestmark = pytest.mark.browser
BOB = ("bob", "bobs-password")
SIGNED_OUT_WITHIN_S = 8.0  # guard check (1 s) + page poll (3 s) + reload, on a loaded 2-core machine


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    folder = tmp_path_factory.mktemp("browser-accounts")
    store = AccountStore.open(folder / "data")
    store.add(*BOB)
    store.add("alice", "alices-password", "admin")
    store.close()
    with running_app(folder, data_dir=folder / "data") as running:
        running.wait_engine_ready()
        yield running


def sign_in(page, url: str, user: str, password: str) -> None:
    page.goto(url)
    page.locator("input[type=password]").wait_for(timeout=30_000)
    page.locator("input[type=text]").fill(user)
    page.locator("input[type=password]").fill(password)
    page.keyboard.press("Enter")
    page.locator("#m3-message textarea").wait_for(timeout=30_000)


def login_form_shown(page) -> bool:
    return page.locator("input[type=password]").count() > 0 and page.locator("#m3-message textarea").count() == 0


def test_sign_in_chat_own_usage_and_sign_out(app):
    with chromium_page() as page:
        sign_in(page, app.url + "/", *BOB)
        box = page.locator("#m3-message textarea")
        box.fill("What is 2+2? Answer with the number only.")
        box.press("Enter")
        answer = page.locator("#m3-chatbot [data-testid='bot']").last
        answer.wait_for(timeout=30_000)
        page.locator("#m3-message textarea").wait_for(timeout=30_000)
        deadline = time.monotonic() + 60
        while page.locator("#m3-stop").is_visible() and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(1)
        page.get_by_role("tab", name="Account").click()
        who = page.locator("#m3-account-who")
        who.get_by_text("Signed in as").wait_for(timeout=15_000)
        assert "bob" in who.inner_text()
        usage = page.locator("#m3-account-usage table")
        usage.wait_for(timeout=15_000)
        cells = usage.locator("tbody tr").first.locator("td").all_inner_texts()
        assert cells[1] == "1", cells  # one request today
        assert "alice" not in page.content()
        page.locator("#m3-sign-out").click()
        page.locator("input[type=password]").wait_for(timeout=15_000)
        page.goto(app.url + "/")
        page.locator("input[type=password]").wait_for(timeout=15_000)
        assert login_form_shown(page), "signed out stays signed out"


def test_a_disabled_user_is_signed_out_within_seconds(app):
    store = AccountStore.open(app.data_dir)
    try:
        with chromium_page() as page:
            sign_in(page, app.url + "/", *BOB)
            time.sleep(4)  # the page's session watch has seen it signed in
            store.set_enabled("bob", False)
            disabled_at = time.monotonic()
            while not login_form_shown(page):
                assert time.monotonic() - disabled_at < SIGNED_OUT_WITHIN_S, "the page still shows the chat"
                time.sleep(0.1)
            print(f"signed out {time.monotonic() - disabled_at:.1f} s after the account was disabled")
            store.set_enabled("bob", True)
    finally:
        store.close()
