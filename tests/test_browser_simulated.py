"""The simulated engine says what it is where a person looks, in real Chromium against `python app.py`: at a
phone's 390×844 (no hover there) a first-visit banner links to the way to the real engine (docs/REAL_ENGINE.md,
served as /real-engine) and stays closed once closed, and a tap on the SIMULATED badge unfolds what simulated
means; nothing of it shows on a real engine's page."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from launch.supervisor import EngineState
from m3ui.engine_link import EngineStatus
from m3ui.ui.header_view import render_banner, render_status
from tests.app_process import running_app
from tests.browser import chromium_page
from tests.test_browser_chat import wait_engine_ready

PHONE = (390, 844)
UI_TIMEOUT_MS = 60_000


@pytest.mark.browser
def test_a_phone_sees_the_banner_the_way_to_the_real_engine_and_what_simulated_means(tmp_path):
    with running_app(tmp_path) as app, chromium_page(PHONE) as page:
        page.set_default_timeout(UI_TIMEOUT_MS)
        page.goto(app.url)
        wait_engine_ready(page)
        banner = page.locator("#m3-sim-banner .m3-sim-banner")
        expect(banner).to_be_visible()
        expect(banner).to_contain_text("Scripted answers, no model here.")
        box = banner.bounding_box()
        assert box and box["x"] >= 0 and box["x"] + box["width"] <= PHONE[0]  # on the screen, not past its edge
        link = banner.get_by_role("link", name="Run the real one →")
        assert link.get_attribute("href") == "/real-engine"

        about = page.locator("#m3-sim-about")
        expect(about).to_be_hidden()
        page.locator("#m3-header .m3-badge-sim").click()
        expect(about).to_be_visible()
        expect(about).to_contain_text("No model runs here")
        expect(about).to_contain_text("CUDA out of memory")
        page.wait_for_timeout(2500)  # the header is redrawn every second: the explanation stays open
        expect(about).to_be_visible()

        with page.context.expect_page() as opened:
            link.click()
        doc = opened.value
        doc.wait_for_load_state()
        expect(doc.locator("h1")).to_have_text("Run the real engine")
        text = doc.locator("main").inner_text()
        for step in ("pip install -r requirements-gpu.txt", "python -m launch.weights download",
                     "python -m launch check", "python -m launch serve", "Save a profile", "--profile"):
            assert step in text, step
        doc.close()

        banner.get_by_role("button", name="Close this note").click()
        expect(banner).to_be_hidden()
        page.reload()
        wait_engine_ready(page)
        page.wait_for_timeout(1500)  # redrawn headers included
        expect(page.locator("#m3-header .m3-badge-sim")).to_be_visible()
        expect(page.locator("#m3-sim-banner .m3-sim-banner")).to_be_hidden()


def test_a_real_engine_shows_no_simulated_note() -> None:
    status = EngineStatus(mode="launched", state=EngineState.READY,
                          ready=True, simulated=False, phase_detail="", progress=1.0, url="http://gpu:30000",
                          model="MiniMax-M3")
    shown = render_status(status)
    assert "m3-sim" not in shown and "SIMULATED" not in shown
    assert render_banner(status) == ""
    assert "m3-sim-banner" in render_banner(EngineStatus(**{**vars(status), "simulated": True, "mode": "simulated"}))
