"""The Monitor tab in real Chromium on `python app.py --fleet` (the real sglang-router, two simulated workers
recording expert routing): the headline shows the fleet's totals with a row per worker, and each worker has its
own expert heatmap, at desktop and phone widths.

With M3UI_SCREENSHOT_DIR set, the two views are saved there as monitor-fleet.png (1280 wide) and
monitor-fleet-phone.png (390 wide): `M3UI_SCREENSHOT_DIR=docs/screenshots pytest tests/test_browser_monitor_fleet.py`.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.app_process import running_app
from tests.browser import chromium_page
from tests.fleet_process import write_fleet_file
from tests.monitor_sims import chatting

pytest.importorskip("sglang_router")
pytestmark = pytest.mark.browser
UI_TIMEOUT_MS = 60_000
WORKER_ROWS = "#m3-mon-headline tr[data-worker]"
HEATMAPS = "#m3-mon-experts .m3-fleet-worker img[data-activations]"


def _save(page: object, name: str) -> None:
    folder = os.environ.get("M3UI_SCREENSHOT_DIR")
    if folder:
        from scripts.screenshots import save_small

        save_small(page.screenshot(), Path(folder) / f"{name}.png")  # type: ignore[attr-defined]


def test_the_monitor_shows_the_fleet_total_and_each_worker(tmp_path: Path) -> None:
    path, router = write_fleet_file(tmp_path)
    with running_app(tmp_path, "--fleet", str(path), timeout=120) as app, chromium_page((1280, 900)) as page, \
            chatting(router, max_tokens=120):
        page.set_default_timeout(UI_TIMEOUT_MS)
        page.goto(app.url)
        page.get_by_role("tab", name="Monitor").click()
        page.wait_for_selector('#m3-mon-headline .m3-fleet[data-answering="2"]')
        assert page.locator(WORKER_ROWS).count() == 2
        page.wait_for_function(f"[...document.querySelectorAll('{HEATMAPS}')].filter(i => i.dataset.activations > 0)"
                               ".length === 2")
        page.wait_for_function(r"/GENERATION\s+[1-9][\d.,]* tok\/s/i.test("
                               "document.querySelector('#m3-mon-headline').innerText)")
        headline = page.inner_text("#m3-mon-headline")
        assert f"at {router}" in headline  # the app's engine is the router
        assert re.search(r"GPU expert hit rate\s+\d+\.\d%", headline, re.IGNORECASE)
        for row in page.locator(WORKER_ROWS).all():
            assert re.search(r"\d+\.\d%", row.inner_text()), row.inner_text()  # each worker's own hit rate
        assert "Fleet total" in headline and "2 of 2 answering" in headline
        assert "/v1/loads answered HTTP 404" not in page.inner_text(".m3-monitor")  # not blind on the router
        page.wait_for_selector("#m3-mon-throughput canvas, #m3-mon-throughput svg")
        page.wait_for_timeout(1500)
        _save(page, "monitor-fleet")

        page.set_viewport_size({"width": 390, "height": 844})
        table = page.locator("#m3-mon-headline .m3-scroll")
        assert table.evaluate("e => e.scrollWidth > e.clientWidth")  # the table scrolls on a phone, not the page
        assert page.evaluate("document.documentElement.scrollWidth <= 390")
        heatmap = page.locator("#m3-mon-experts .m3-fleet-worker .m3-heatmap").first  # scrolls inside, as on one engine
        box = heatmap.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390
        page.locator("#m3-mon-headline .m3-fleet").scroll_into_view_if_needed()  # the workers, under the tiles
        page.wait_for_timeout(1000)
        _save(page, "monitor-fleet-phone")
