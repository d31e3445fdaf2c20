"""Dark mode in real Chromium against `python app.py`: a visible toggle in the header of the app and of the admin
page, remembered by the browser across reloads and between the two pages, and the page never drawn in the
other theme first."""

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

# Every animation frame until the page's first blocks are drawn, whether the page was dark: the blocks must never
# be drawn in the other theme first (a flash). Gradio mounts a bare page first; its colour follows ours too.
RECORD_FRAMES = """window.__frames = [];
const record = () => {
  const drawn = document.querySelectorAll('.block').length > 0;
  window.__frames.push({drawn, dark: document.documentElement.classList.contains('dark')});
  if (!drawn || window.__frames.length < 5) requestAnimationFrame(record);
};
requestAnimationFrame(record);"""


def themes_drawn(page) -> set[bool]:
    """Whether the page was dark, in each frame that showed its blocks, from its load until now."""
    page.wait_for_function("window.__frames.some(frame => frame.drawn)")
    return {frame["dark"] for frame in page.evaluate("window.__frames") if frame["drawn"]}


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
        page.add_init_script(RECORD_FRAMES)
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
        assert is_dark(page) and themes_drawn(page) == {True}
        expect(page.locator("#m3-header .m3-theme-toggle")).to_have_accessible_name("☀ Light")

        page.goto(app.admin_url)
        admin_toggle = page.locator(".m3a-admin-title .m3-theme-toggle")
        admin_toggle.wait_for()
        expect(admin_toggle).to_have_accessible_name("☀ Light")
        assert is_dark(page) and themes_drawn(page) == {True}
        admin_toggle.click()
        expect(admin_toggle).to_have_accessible_name("☾ Dark")
        assert not is_dark(page)

        page.goto(app.url)
        wait_engine_ready(page)
        assert not is_dark(page) and themes_drawn(page) == {False}
        expect(page.locator("#m3-header .m3-theme-toggle")).to_have_accessible_name("☾ Dark")
