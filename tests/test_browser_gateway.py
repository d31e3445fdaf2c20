"""The gateway in a real browser: a person creates an API key in the Account tab (shown once), the Connect tab
shows settings filled with this server's URL and model, its "Test this key" button tries the key against the
gateway from the page, and the key works for the openai SDK; revoked, it is refused. Screenshots at 1440 and 390
wide go to the test's folder (M3UI_SCREENSHOTS=DIR keeps them)."""

from __future__ import annotations

import os
import re
import secrets
from pathlib import Path

import openai
import pytest
from playwright.sync_api import expect

from m3ui.accounts import AccountStore
from tests.app_process import running_app
from tests.browser import chromium_page, open_tab
from tests.test_browser_accounts import sign_in

BOB = ("bob", "bobs-password")
pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    folder = tmp_path_factory.mktemp("browser-gateway")
    store = AccountStore.open(folder / "data")
    store.add(*BOB)
    store.close()
    with running_app(folder, data_dir=folder / "data") as running:
        running.wait_engine_ready()
        yield running


def shots_dir(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("M3UI_SCREENSHOTS", tmp_path))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def create_key(page, label: str) -> str:
    open_tab(page, "Account")
    page.locator("#m3-key-label textarea, #m3-key-label input").first.fill(label)
    page.locator("#m3-key-create").click()
    shown = page.locator("#m3-key-new textarea, #m3-key-new input").first
    shown.wait_for(timeout=30_000)
    page.wait_for_function("() => { const e = document.querySelector('#m3-key-new textarea, #m3-key-new input');"
                           " return e && e.value.startsWith('m3ui_'); }", timeout=30_000)
    return shown.input_value()


@pytest.mark.parametrize("width", [1440, 390])
def test_create_a_key_connect_and_test_it(app, tmp_path, width):
    shots = shots_dir(tmp_path)
    with chromium_page(viewport=(width, 1000)) as page:
        sign_in(page, app.url + "/", *BOB)
        label = f"laptop-{width}-{secrets.token_hex(3)}"  # its own on a rerun too (the account keeps the first's)
        key = create_key(page, label)
        assert re.fullmatch(r"m3ui_[0-9a-f]{12}_[A-Za-z0-9_-]{43}", key)
        table = page.locator("#m3-keys-table table")
        table.get_by_text(label).wait_for(timeout=30_000)
        assert key not in table.inner_text(), "the table never shows the key itself"
        page.screenshot(path=str(shots / f"account-keys-{width}.png"), full_page=True)

        open_tab(page, "Connect")
        page.locator("#m3-connect-where").get_by_text("model").wait_for(timeout=30_000)
        where = page.locator("#m3-connect-where").inner_text()
        assert app.url in where and "MiniMax-M3" in where
        claude = page.locator("#m3-connect-claude-code")
        claude.get_by_text("ANTHROPIC_BASE_URL").wait_for(timeout=30_000)
        assert app.url in claude.inner_text()
        page.locator("#m3-connect-key input").fill(key)
        page.locator("#m3-connect-test").click()
        result = page.locator("#m3-connect-result textarea, #m3-connect-result input").first
        page.wait_for_function("() => { const e = document.querySelector('#m3-connect-result textarea, "
                               "#m3-connect-result input'); return e && e.value.length > 0; }", timeout=30_000)
        assert result.input_value().startswith("This key works"), result.input_value()
        page.screenshot(path=str(shots / f"connect-{width}.png"), full_page=True)

        with openai.OpenAI(base_url=app.url + "/v1", api_key=key, max_retries=0) as client:
            assert [m.id for m in client.models.list()] == ["MiniMax-M3"]

        key_id = key.split("_")[1]
        open_tab(page, "Account")
        page.locator("#m3-key-revoke-id input, #m3-key-revoke-id textarea").first.fill(key_id)
        page.locator("#m3-key-revoke").click()
        page.locator(f'#m3-keys-table tr[data-key="{key_id}"]').get_by_text("revoked").wait_for(timeout=30_000)
        open_tab(page, "Connect")
        page.locator("#m3-connect-key input").fill(key)
        page.locator("#m3-connect-test").click()
        page.wait_for_function("() => document.querySelector('#m3-connect-result textarea, #m3-connect-result input')"
                               ".value.startsWith('Refused')", timeout=30_000)
        assert "401" in result.input_value()


def test_revoke_is_off_until_a_key_id_is_typed_and_the_connect_page_shows_commands_as_code(app):
    with chromium_page(viewport=(1440, 900)) as page:
        sign_in(page, app.url + "/", *BOB)
        open_tab(page, "Account")
        revoke = page.locator("#m3-key-revoke")
        expect(revoke).to_be_disabled()  # red and destructive, with nothing to act on
        typed = page.locator("#m3-key-revoke-id input, #m3-key-revoke-id textarea").first
        typed.fill("0123456789ab")
        expect(revoke).to_be_enabled()
        typed.fill("  ")
        expect(revoke).to_be_disabled()
        open_tab(page, "Connect")
        title = page.locator("#m3-connect-title-claude-code")
        expect(title.locator("code")).to_have_text("claude")
        assert "`" not in title.inner_text()
