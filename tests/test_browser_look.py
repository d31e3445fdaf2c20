"""How the pages look, measured in real Chromium against `python app.py`: bold and uppercase text is set in one
font (no capital A from another font in the middle of a word); the admin's secondary buttons look like buttons in
the light theme (an edge that stands out from what is behind them); tool arguments, reasoning and the stats line
meet WCAG AA (4.5:1, as drawn: with the opacity of every block around them) in both themes, reasoning at 13 px or
more."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.app_process import running_app
from tests.browser import chromium_page
from tests.test_browser_chat import wait_engine_ready

pytestmark = pytest.mark.browser
UI_TIMEOUT_MS = 60_000
ADMIN_PASSWORD = "look-admin-pw-1"


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    with running_app(tmp_path_factory.mktemp("look"), "--admin-password", ADMIN_PASSWORD) as app:
        yield app


# WCAG's contrast ratio of two CSS colours, and the opaque background behind an element (the nearest one painted).
CONTRAST_JS = """
window.m3Luminance = (colour) => {
  const [r, g, b] = colour.match(/[\\d.]+/g).slice(0, 3).map(Number).map(v => {
    v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
};
window.m3Contrast = (a, b) => {
  const [x, y] = [m3Luminance(a), m3Luminance(b)].sort((p, q) => q - p);
  return (x + 0.05) / (y + 0.05);
};
window.m3Behind = (element) => {
  for (let e = element.parentElement; e; e = e.parentElement) {
    const colour = getComputedStyle(e).backgroundColor;
    if (!colour.startsWith('rgba(0, 0, 0, 0)') && !colour.endsWith(', 0)')) return colour;
  }
  return 'rgb(255, 255, 255)';
};
window.m3TextContrast = (element) => {
  let alpha = 1;
  for (let e = element; e; e = e.parentElement) alpha *= parseFloat(getComputedStyle(e).opacity);
  const fg = getComputedStyle(element).color.match(/[\\d.]+/g).map(Number);
  alpha *= fg.length > 3 ? fg[3] : 1;
  const behind = m3Behind(element);
  const bg = behind.match(/[\\d.]+/g).map(Number);
  const seen = [0, 1, 2].map(i => Math.round(fg[i] * alpha + bg[i] * (1 - alpha)));
  return m3Contrast(`rgb(${seen.join(', ')})`, behind);
};"""
SECONDARY = ("#m3-users-enable", "#m3-users-set-password", "#m3-users-set-role", "#m3-users-set-quota",
             "#m3-users-save-settings", "#m3-profile-no-startup")


def log_in_admin(page, app, theme: str = "light") -> None:
    page.goto(f"{app.url}/admin/?__theme={theme}")
    page.locator("input[type=text]").fill("admin")
    page.locator("input[type=password]").fill(ADMIN_PASSWORD)
    page.keyboard.press("Enter")
    page.wait_for_selector("#m3-admin-status .m3a-state")


def fonts_of(page, selector: str) -> list[str]:
    """The fonts Chromium really drew the first element matching `selector` with (one per face used), once the
    page's fonts have loaded."""
    page.wait_for_timeout(1000)  # the page asks for the faces its text needs, then they load
    page.evaluate("async () => { await document.fonts.ready; }")
    cdp = page.context.new_cdp_session(page)
    cdp.send("DOM.enable")
    cdp.send("CSS.enable")
    root = cdp.send("DOM.getDocument", {"depth": -1})["root"]["nodeId"]
    node = cdp.send("DOM.querySelector", {"nodeId": root, "selector": selector})["nodeId"]
    assert node, f"nothing matches {selector}"
    return [font["familyName"] for font in cdp.send("CSS.getPlatformFontsForNode", {"nodeId": node})["fonts"]]


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_bold_and_uppercase_text_is_drawn_in_one_font(app, theme: str) -> None:
    with chromium_page((1440, 900)) as page:
        page.set_default_timeout(UI_TIMEOUT_MS)
        page.goto(f"{app.url}/?__theme={theme}")
        wait_engine_ready(page)
        page.get_by_role("tab", name="Monitor").click()
        page.wait_for_selector("#m3-mon-headline .m3-kpi-label")
        for selector in (".m3-h h3", "#m3-mon-headline .m3-kpi-label", "#m3-header .m3-title"):
            assert len(set(fonts_of(page, selector))) == 1, (selector, fonts_of(page, selector))
        log_in_admin(page, app, theme)
        for selector in ("#m3-admin-status .m3a-state", ".m3a-admin-title"):
            assert len(set(fonts_of(page, selector))) == 1, (selector, fonts_of(page, selector))


def test_secondary_admin_buttons_look_like_buttons_in_the_light_theme(app) -> None:
    with chromium_page((1440, 900)) as page:
        page.set_default_timeout(UI_TIMEOUT_MS)
        page.add_init_script(CONTRAST_JS)
        log_in_admin(page, app)
        for tab, selectors in (("Users", SECONDARY[:5]), ("Profiles", SECONDARY[5:])):
            page.get_by_role("tab", name=tab).click()
            for selector in selectors:
                button = page.locator(selector)
                button.wait_for()
                edge = button.evaluate("""b => { const s = getComputedStyle(b);
                  return [parseFloat(s.borderTopWidth), m3Contrast(s.borderTopColor, m3Behind(b)),
                          m3Contrast(s.backgroundColor, m3Behind(b))]; }""")
                # a drawn edge that stands out from the panel behind, or a fill that does
                assert (edge[0] >= 1 and edge[1] >= 1.5) or edge[2] >= 1.5, (selector, edge)


@pytest.mark.parametrize("theme", ["dark", "light"])
def test_tool_arguments_reasoning_and_the_stats_line_meet_wcag_aa(app, theme: str) -> None:
    with chromium_page((1440, 900)) as page:
        page.set_default_timeout(UI_TIMEOUT_MS)
        page.add_init_script(CONTRAST_JS)
        page.goto(f"{app.url}/?__theme={theme}")
        wait_engine_ready(page)
        page.get_by_role("tab", name="Tools").click()
        page.fill("#m3-tools-message textarea", "What's the weather in Tokyo?")
        page.keyboard.press("Enter")
        page.wait_for_selector("#m3-tools-chatbot pre code .token.property")
        arguments = page.evaluate("""() => [...document.querySelectorAll('#m3-tools-chatbot pre code .token')]
          .map(e => [e.textContent, m3TextContrast(e)])""")
        assert arguments and all(ratio >= 4.5 for _, ratio in arguments), arguments

        page.get_by_role("tab", name="Chat").click()
        page.get_by_label("Enabled").first.check()
        page.fill("#m3-message textarea", "Solve step by step: 17 * 23")
        page.keyboard.press("Enter")
        page.wait_for_selector("#m3-chatbot .m3-stats")
        # The pane stays open while the reasoning streams and folds itself once its status is done: a click before
        # that folds it (read 1:1 in a busy CI run), so the click waits for the fold, then the pane must be open
        title = page.locator("#m3-chatbot .thought-group [role=button]").first
        page.wait_for_function("""() => { const t = document.querySelector('#m3-chatbot .thought-group [role=button]');
          return t && !t.classList.contains('expanded')
            && !document.querySelector('#m3-chatbot .thought-group .loading-spinner'); }""")
        title.click()  # unfold the reasoning
        expect(title).to_have_class(re.compile(r"\bexpanded\b"))
        reasoning = page.locator("#m3-chatbot .thought-group .message-content p").first
        reasoning.wait_for()
        # the fold fades in (opacity): measured once its animations end, not part way through (read 1:1 mid-fade)
        reasoning.evaluate("""e => Promise.all(document.getAnimations()
          .filter(a => a.effect && a.effect.target && a.effect.target.contains(e)).map(a => a.finished))""")
        size, ratio = reasoning.evaluate("e => [parseFloat(getComputedStyle(e).fontSize), m3TextContrast(e)]")
        assert size >= 13 and ratio >= 4.5, (size, ratio)
        stats = page.locator("#m3-chatbot .m3-stats").last.evaluate("e => m3TextContrast(e)")
        assert stats >= 4.5, stats
