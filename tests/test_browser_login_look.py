"""The sign-in page (m3ui/web/login_page.py) as people see it, in real Chromium against `python app.py` with accounts,
in both themes at 1440 and 390 px wide: every text, the button's included, meets WCAG AA (4.5:1) on what is behind
it, the page is drawn in the app's own font (the Source Sans face the app ships, loaded, not a fallback), and it
carries the app's name."""

from __future__ import annotations

import pytest

from tests.app_process import running_app_with_accounts
from tests.browser import chromium_page

pytestmark = pytest.mark.browser
BOB = ("bob", "bobs-password")
UI_TIMEOUT_MS = 60_000
AA = 4.5

# (text, its contrast ratio against the first opaque background behind it) for every element that shows text
CONTRASTS = """() => {
  const rgb = (c) => (c.match(/[\\d.]+/g) || []).map(Number);
  const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
  const lum = ([r, g, b]) => 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  const behind = (el) => { for (let e = el; e; e = e.parentElement) {
    const c = rgb(getComputedStyle(e).backgroundColor); if (c.length === 3 || c[3] > 0) return c.slice(0, 3); }
    return [255, 255, 255]; };
  const shown = [...document.querySelectorAll('body *')].filter((el) => el.getClientRects().length
    && getComputedStyle(el).visibility !== 'hidden'
    && ([...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim()) || (el.value || '').length));
  return shown.map((el) => { const a = lum(rgb(getComputedStyle(el).color)), b = lum(behind(el));
    return [(el.value || el.textContent).trim().slice(0, 40), (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05)]; });
}"""
# the font of every element that shows text (a <button> does not inherit the page's), and the faces loaded
FONT = """async () => { await document.fonts.ready;
  const text = [...document.querySelectorAll('body *')].filter((el) => el.getClientRects().length
    && [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim()));
  const families = text.map((el) => [el.textContent.trim().slice(0, 20), getComputedStyle(el).fontFamily]);
  const loaded = [...document.fonts].filter((f) => f.status === 'loaded')
    .map((f) => f.family.replace(/"/g, '') + ' ' + f.weight);
  return {families, loaded}; }"""


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    with running_app_with_accounts(tmp_path_factory.mktemp("login-look"), BOB) as running:
        yield running


@pytest.mark.parametrize("theme", ["light", "dark"])
@pytest.mark.parametrize("width", [1440, 390])
def test_every_text_reads_at_aa_in_the_apps_font_with_its_name(app, theme: str, width: int) -> None:
    with chromium_page((width, 900 if width > 400 else 844)) as page:
        page.set_default_timeout(UI_TIMEOUT_MS)
        page.goto(f"{app.url}/login?__theme={theme}")
        assert page.evaluate("document.documentElement.classList.contains('dark')") is (theme == "dark")
        page.locator("input[type=text]").fill("bob")  # a typed name must read too
        assert "MiniMax-M3" in page.locator(".m3-login-name").inner_text()
        low = [(text, round(ratio, 2)) for text, ratio in page.evaluate(CONTRASTS) if ratio < AA]
        assert not low, f"below WCAG AA ({AA}:1) in the {theme} theme at {width} px: {low}"
        fonts = page.evaluate(FONT)
        other = [(text, family) for text, family in fonts["families"]
                 if not family.lstrip("\"'").startswith("m3ui Source Sans")]
        assert fonts["families"] and not other, other
        assert any(f.startswith("m3ui Source Sans") for f in fonts["loaded"]), fonts  # served, not a fallback
