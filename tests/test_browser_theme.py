"""Dark mode in real Chromium against `python app.py`: a visible toggle in the header of the app and of the admin
page, remembered by the browser across reloads and between the two pages, one theme per page."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.app_process import running_app
from tests.browser import chromium_page
from tests.test_browser_chat import wait_engine_ready

pytestmark = pytest.mark.browser
UI_TIMEOUT_MS = 60_000
LUMA = """(element) => {
  const [r, g, b] = getComputedStyle(element).backgroundColor.match(/\\d+/g);
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}"""


def is_dark(page) -> bool:
    classes = page.evaluate("[document.documentElement.classList.contains('dark'), "
                            "document.body.classList.contains('dark')]")
    luma = page.locator("gradio-app").evaluate(LUMA)  # Gradio paints the page's background there
    assert classes in ([True, True], [False, False]), classes  # one theme per page, never half of each
    assert (luma < 80) == classes[0], (classes, luma)
    return classes[0]


def test_dark_mode_is_a_header_toggle_remembered_across_reloads_and_on_the_admin_page(tmp_path):
    with running_app(tmp_path) as app, chromium_page() as page:
        page.set_default_timeout(UI_TIMEOUT_MS)
        page.goto(app.url)
        wait_engine_ready(page)
        toggle = page.locator("#m3-header .m3-theme-toggle")
        expect(toggle).to_have_accessible_name("☾ Dark")
        assert not is_dark(page)

        toggle.click()
        expect(toggle).to_have_accessible_name("☀ Light")
        assert is_dark(page)

        page.reload()
        wait_engine_ready(page)
        assert is_dark(page)
        expect(page.locator("#m3-header .m3-theme-toggle")).to_have_accessible_name("☀ Light")

        page.goto(app.admin_url)
        admin_toggle = page.locator(".m3a-admin-title .m3-theme-toggle")
        expect(admin_toggle).to_have_accessible_name("☀ Light")
        assert is_dark(page)
        admin_toggle.click()
        expect(admin_toggle).to_have_accessible_name("☾ Dark")
        assert not is_dark(page)

        page.goto(app.url)
        wait_engine_ready(page)
        assert not is_dark(page)
        expect(page.locator("#m3-header .m3-theme-toggle")).to_have_accessible_name("☾ Dark")
