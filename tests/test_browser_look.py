"""How the pages look, measured in real Chromium against `python app.py`: bold and uppercase text is set in one
font (no capital A from another font in the middle of a word)."""

from __future__ import annotations

import pytest

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


def fonts_of(page, selector: str) -> list[str]:
    """The fonts Chromium really drew the first element matching `selector` with (one per family used)."""
    cdp = page.context.new_cdp_session(page)
    cdp.send("DOM.enable")
    cdp.send("CSS.enable")
    root = cdp.send("DOM.getDocument", {"depth": -1})["root"]["nodeId"]
    node = cdp.send("DOM.querySelector", {"nodeId": root, "selector": selector})["nodeId"]
    assert node, f"nothing matches {selector}"
    return [font["familyName"] for font in cdp.send("CSS.getPlatformFontsForNode", {"nodeId": node})["fonts"]]


def test_bold_and_uppercase_text_is_drawn_in_one_font(app) -> None:
    with chromium_page((1440, 900)) as page:
        page.set_default_timeout(UI_TIMEOUT_MS)
        page.goto(app.url)
        wait_engine_ready(page)
        page.get_by_role("tab", name="Monitor").click()
        page.wait_for_selector("#m3-mon-headline .m3-kpi-label")
        for selector in (".m3-h h3", "#m3-mon-headline .m3-kpi-label", "#m3-header .m3-title"):
            assert len(set(fonts_of(page, selector))) == 1, (selector, fonts_of(page, selector))
        page.goto(app.url + "/admin/")
        page.locator("input[type=text]").fill("admin")
        page.locator("input[type=password]").fill(ADMIN_PASSWORD)
        page.keyboard.press("Enter")
        page.wait_for_selector("#m3-admin-status .m3a-state")
        for selector in ("#m3-admin-status .m3a-state", ".m3a-admin-title"):
            assert len(set(fonts_of(page, selector))) == 1, (selector, fonts_of(page, selector))
