"""The Monitor tab in real Chromium against `python app.py` on the simulated engine: the panels render, the
expert heatmap and the figures update while the engine serves chats, and a hidden tab costs no refreshes."""

from __future__ import annotations

import re
import time

import pytest

from tests.browser import ready_page
from tests.monitor_sims import chatting

pytestmark = pytest.mark.browser
UI_TIMEOUT_MS = 30_000
HEATMAP = "#m3-mon-experts img[data-activations]"


@pytest.fixture
def page(app):
    with ready_page(app.url, (1400, 1000), UI_TIMEOUT_MS) as page:
        page.get_by_role("tab", name="Monitor").click()
        page.wait_for_selector('#m3-mon-headline [data-engine-state="ok"]')
        yield page


@pytest.fixture
def chats(page):
    """Two users chatting with the engine the app started, for as long as the test runs."""
    match = re.search(r"at (http://127\.0\.0\.1:\d+)", page.inner_text("#m3-mon-headline"))
    assert match, page.inner_text("#m3-mon-headline")
    with chatting(match.group(1)):
        yield


def _activations(page) -> int:
    return int(page.get_attribute(HEATMAP, "data-activations"))


def test_the_panels_render_and_update_while_the_engine_serves_chats(page, chats):
    headline = page.locator("#m3-mon-headline")
    assert "Serving" in headline.inner_text() and "GPU EXPERT HIT RATE" in headline.inner_text().upper()
    page.wait_for_function(f"(document.querySelector('{HEATMAP}')?.dataset.activations ?? 0) > 0")
    first = _activations(page)
    assert page.get_attribute(HEATMAP, "src").startswith("data:image/png;base64,")
    assert re.search(r"GPU expert hit rate\s+\d+\.\d%", headline.inner_text(), re.IGNORECASE)
    assert "Hottest CPU-resident experts" in page.inner_text("#m3-mon-rankings")
    page.wait_for_function(f"document.querySelector('{HEATMAP}').dataset.activations > {first}")  # a later dump
    assert re.search(r"\d+(\.\d)? tok/s", headline.inner_text())
    for chart in ("throughput", "requests", "cpu-load", "hit-history"):
        page.wait_for_selector(f"#m3-mon-{chart} canvas, #m3-mon-{chart} svg")
    gpu = page.inner_text("#m3-mon-gpu")
    assert "No NVIDIA GPU on this machine" in gpu or "GPU 0" in gpu
    assert "NUMA node" in page.inner_text("#m3-mon-cpu") or "All CPUs" in page.inner_text("#m3-mon-cpu")


def _monitor_refreshes(page, seconds: float, enough: int | None = None) -> int:
    """How many monitor refreshes the browser received in `seconds` (or until `enough` of them arrived: on a
    loaded machine they come later, never sooner)."""
    responses: list = []
    listener = lambda response: responses.append(response)  # noqa: E731
    page.on("response", listener)

    def refreshes() -> int:
        return sum(1 for response in responses if "/gradio_api/" in response.url and "m3-kpis" in response.text())

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and (enough is None or refreshes() < enough):
        page.wait_for_timeout(250)  # (sync Playwright delivers events only while it is called)
    page.remove_listener("response", listener)
    return refreshes()


def test_the_monitor_refreshes_only_while_its_tab_is_shown(page):
    assert _monitor_refreshes(page, 20, enough=2) >= 2
    page.get_by_role("tab", name="Chat").click()
    page.wait_for_timeout(500)  # a refresh already under way may still land
    assert _monitor_refreshes(page, 2.5) == 0
    page.get_by_role("tab", name="Monitor").click()
    assert _monitor_refreshes(page, 20, enough=2) >= 2
