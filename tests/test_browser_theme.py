"""Dark mode in real Chromium against `python app.py`: a visible toggle in the header of the app and of the admin
page, remembered by the browser across reloads and between the two pages, and no page shown in the other theme
first, not even for a frame."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.app_process import running_app
from tests.browser import UI_TIMEOUT_MS, chromium_page, wait_engine_ready

pytestmark = pytest.mark.browser
# The background the user sees: Gradio paints it on <gradio-app> once mounted; before that, the bare <body>.
SEEN_LUMA = """() => {
  const app = document.querySelector('gradio-app');
  const painted = app ? getComputedStyle(app).backgroundColor : 'rgba(0, 0, 0, 0)';
  const colour = painted.startsWith('rgba(0, 0, 0, 0)') ? getComputedStyle(document.body).backgroundColor : painted;
  const [r, g, b] = colour.match(/\\d+/g).map(Number);
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}"""
# Every animation frame from the first paint until the page's blocks are drawn: how dark what it showed was.
RECORD_FRAMES = f"""window.__frames = [];
const seenLuma = {SEEN_LUMA};
const record = () => {{
  if (document.body) {{
    const drawn = document.querySelectorAll('.block').length > 0;
    window.__frames.push({{drawn, dark: seenLuma() < 80}});
    if (drawn && window.__frames.filter(frame => frame.drawn).length >= 5) return;
  }}
  requestAnimationFrame(record);
}};
requestAnimationFrame(record);"""


def themes_shown(page) -> set[bool]:
    """Whether the page looked dark, in each frame from its first paint until its blocks were drawn: a page that
    flashes the other theme first (the bare page, or blocks drawn before the theme is set) shows both."""
    page.wait_for_function("window.__frames.some(frame => frame.drawn)")
    return {frame["dark"] for frame in page.evaluate("window.__frames")}


def is_dark(page) -> bool:
    classes = page.evaluate("[document.documentElement.classList.contains('dark'), "
                            "document.body.classList.contains('dark')]")
    luma = page.evaluate(SEEN_LUMA)
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

        page.goto(app.url)  # a new visit, without the ?__theme= the toggle put in the address
        wait_engine_ready(page)
        assert is_dark(page) and themes_shown(page) == {True}
        expect(page.locator("#m3-header .m3-theme-toggle")).to_have_accessible_name("☀ Light")

        page.goto(app.admin_url)
        admin_toggle = page.locator(".m3a-admin-title .m3-theme-toggle")
        admin_toggle.wait_for()
        expect(admin_toggle).to_have_accessible_name("☀ Light")
        assert is_dark(page) and themes_shown(page) == {True}
        admin_toggle.click()
        expect(admin_toggle).to_have_accessible_name("☾ Dark")
        assert not is_dark(page)

        page.goto(app.url)
        wait_engine_ready(page)
        assert not is_dark(page) and themes_shown(page) == {False}
        expect(page.locator("#m3-header .m3-theme-toggle")).to_have_accessible_name("☾ Dark")
