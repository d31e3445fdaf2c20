"""The Monitor's history charts in real Chromium against `python app.py` on the simulated engine while it serves chats:
they are drawn with the tab's first refresh (the sampler has history: never an empty frame for the first seconds),
before any expert was routed words say so and no empty hit-rate chart is shown,
each recorder dump of the GPU hit rate is a visible point (one dump alone was a line of no length: nothing), and on
a phone (390 px) no two time labels of an axis overlap."""

from __future__ import annotations

import json
import re

import pytest

from tests.app_process import running_app
from tests.browser import chromium_page
from tests.monitor_sims import chatting

pytestmark = pytest.mark.browser
UI_TIMEOUT_MS = 60_000
PHONE = (390, 844)
CHARTS = ("hit-history", "throughput", "requests", "cpu-load")
# the boxes of a chart's x-axis labels, left to right
X_LABELS = """(id) => [...document.querySelectorAll(`#${id} svg [aria-label^="X-axis"] .role-axis-label text`)]
  .map((t) => { const r = t.getBoundingClientRect(); return [t.textContent, r.left, r.right]; })
  .filter(([text, left, right]) => text && right > left).sort((a, b) => a[1] - b[1])"""
# the points drawn (a mark of a size one can see) in the hit-rate chart
POINTS = """() => [...document.querySelectorAll('#m3-mon-hit-history svg .mark-symbol.role-mark path')].filter((p) => {
  const r = p.getBoundingClientRect(), style = getComputedStyle(p);
  return r.width >= 4 && r.height >= 4 && Number(style.opacity) > 0 && style.visibility !== 'hidden'; }).length"""


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    with running_app(tmp_path_factory.mktemp("monitor-charts")) as running:
        running.wait_engine_ready()
        yield running


def _open_monitor(page, url: str) -> str:
    """The Monitor tab opened; the engine's URL, from its headline."""
    page.set_default_timeout(UI_TIMEOUT_MS)
    page.goto(url)
    page.get_by_role("tab", name="Monitor").click()
    page.wait_for_selector('#m3-mon-headline [data-engine-state="ok"]')
    engine = re.search(r"at (http://127\.0\.0\.1:\d+)", page.inner_text("#m3-mon-headline"))
    assert engine, page.inner_text("#m3-mon-headline")
    return engine.group(1)


def test_before_any_expert_was_routed_words_say_what_is_coming_not_an_empty_chart(app) -> None:
    with chromium_page((1440, 900)) as page:
        _open_monitor(page, app.url)  # (first in this module: nothing was asked of the engine yet)
        experts = page.locator("#m3-mon-experts")
        experts.get_by_text("no expert was activated in the window yet: send a chat").wait_for()
        page.wait_for_timeout(2_000)  # a few refreshes
        assert page.locator("#m3-mon-hit-history").is_hidden()


def test_the_charts_come_with_the_first_refresh(app) -> None:
    with chromium_page((1440, 900)) as page, chatting(_open_monitor(page, app.url)):
        page.wait_for_function("(document.querySelector('#m3-mon-experts img')?.dataset.activations ?? 0) > 0")
        page.get_by_role("tab", name="Chat").click()  # a recorder dump is in: the first refresh brings the heatmap
        page.reload()
        refreshes: list[str] = []

        def only_the_first_refreshes(route) -> None:  # later ones are dropped: the first must carry the charts
            if route.request.method != "POST":  # (the heartbeat is a stream, never whole)
                route.continue_()
                return
            response = route.fetch()
            body = response.text()
            if "m3-kpis" in body:
                refreshes.append(body)
                if len(refreshes) > 2:
                    route.abort()
                    return
            route.fulfill(response=response, body=body)

        page.route(re.compile(r".*/gradio_api/.*"), only_the_first_refreshes)
        page.get_by_role("tab", name="Monitor").click()
        page.wait_for_selector('#m3-mon-headline [data-engine-state="ok"]')
        for chart in CHARTS:
            page.wait_for_selector(f"#m3-mon-{chart} svg .role-mark", timeout=15_000)
        first = json.loads(refreshes[0])["data"]
        assert "m3-heatmap" in first[4] and "columns" in first[9] and "columns" in first[14], first[8:15]


def test_a_dump_is_a_point_and_time_labels_do_not_overlap_on_a_phone(app) -> None:
    with chromium_page(PHONE) as page, chatting(_open_monitor(page, app.url)):
        page.wait_for_selector("#m3-mon-hit-history svg")
        page.wait_for_function(f"({POINTS})() >= 1", timeout=20_000)
        page.wait_for_timeout(6_000)  # a later chart refresh, with more of the 5 minutes filled
        for chart in CHARTS:
            page.wait_for_function(f"({X_LABELS})('m3-mon-{chart}').length >= 1")
            labels = page.evaluate(X_LABELS, f"m3-mon-{chart}")
            touching = [(a[0], b[0]) for a, b in zip(labels, labels[1:], strict=False) if b[1] < a[2] + 4]
            assert not touching, f"{chart}: time labels overlap at 390 px: {labels}"
