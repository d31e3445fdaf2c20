"""The admin's Tune tab in real Chromium on the real app, whose simulated engine plays a 2-socket, 4-node,
48-core host with one H200 (M3UI_SIM_HOST): the roofline of the running launch, then a tune that relaunches the
engine trial by trial, fills the table, leaves the best running and saves it as a profile; at 1440 and 390 wide.

Screenshots go to /tmp/m3ui-admin-tune*.png, and with M3UI_SCREENSHOT_DIR set also there as admin-tune.png and
admin-tune-phone.png: `M3UI_SCREENSHOT_DIR=docs/screenshots pytest tests/test_browser_admin_tune.py`.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from launch.profile import ProfileStore
from launch.run_state import read_run_state
from tests.app_process import running_app
from tests.browser import chromium_page
from tests.speed_cli import HOSTS

pytestmark = pytest.mark.browser
ADMIN_PASSWORD = "tune-pw"
ENV = {"M3UI_SIM_HOST": str(HOSTS / "two-socket-h200.json"), "M3UI_SIM_UNTHROTTLED": "1",
       "M3UI_SIM_STARTUP_SECONDS": "0"}
UI_TIMEOUT_MS = 120_000


def _save(page: object, name: str) -> None:
    page.screenshot(path=f"/tmp/m3ui-{name}.png", full_page=True)  # type: ignore[attr-defined]
    folder = os.environ.get("M3UI_SCREENSHOT_DIR")
    if folder:
        from scripts.screenshots import save_small

        save_small(page.screenshot(full_page=True), Path(folder) / f"{name}.png")  # type: ignore[attr-defined]


def _open_tune_tab(page: object, url: str) -> None:
    page.goto(url)
    page.locator("input[type=text]").fill("admin")
    page.locator("input[type=password]").fill(ADMIN_PASSWORD)
    page.keyboard.press("Enter")
    page.locator('#m3-admin-status .m3a-status-card[data-engine-state="ready"]').wait_for()
    page.get_by_role("tab", name="Tune").click()
    page.locator("#m3-tune-roofline").get_by_text("decode ceiling, 1 / 4 / 16 requests").wait_for()


def test_the_tune_tab_shows_the_roofline_runs_a_tune_and_saves_the_best(tmp_path: Path) -> None:
    with running_app(tmp_path, "--admin-password", ADMIN_PASSWORD, env=ENV, timeout=120) as app:
        with chromium_page((1440, 1000)) as page:
            page.set_default_timeout(UI_TIMEOUT_MS)
            _open_tune_tab(page, app.url + "/admin/")
            roofline = page.inner_text("#m3-tune-roofline")
            assert "64 / 2" in roofline  # the seed's --kt-cpuinfer and pools, as launched
            page.locator("#m3-tune-budget input").fill("4")
            page.locator("#m3-tune-start").click()
            page.locator("#m3-tune-outcome").get_by_text("Tune started").wait_for()
            page.locator('#m3-tune-progress [data-state="done"]').wait_for()
            trials = page.locator("#m3-tune-trials tr")
            assert trials.count() >= 3  # header, baseline, at least one trial
            state = page.inner_text("#m3-tune-progress .m3a-tune-state")
            assert "saved as profile 'tuned-app'" in state, state
            # the roofline follows the relaunch: the tuned thread pools, one per NUMA node
            page.locator("#m3-tune-roofline td").filter(has_text=re.compile(r"^\d+ / 4$")).wait_for()
            _save(page, "admin-tune")
            # the same page on a phone (at 390 px Gradio folds the tabs into a menu; the open tab stays)
            page.set_viewport_size({"width": 390, "height": 844})
            page.wait_for_timeout(500)
            page.locator("#m3-tune-trials").wait_for()
            width = page.evaluate("document.documentElement.scrollWidth")
            _save(page, "admin-tune-phone")
        assert width <= 390 + 1, f"the page scrolls sideways at 390 px ({width} px wide)"
        tuned = ProfileStore(app.data_dir / "profiles").load("tuned-app").settings
        state_file = read_run_state(app.data_dir)
        assert state_file is not None and state_file.settings.kt_cpuinfer == tuned.kt_cpuinfer
        assert tuned.kt_threadpool_count == 4
