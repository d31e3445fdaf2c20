"""The Monitor as a new user reads it, in real Chromium against `python app.py` on the simulated engine while it
serves chats: a low GPU hit rate is not shown as a good one (large and green), the legends speak words rather
than engine flags, and the charts' time axes read on a 24-hour clock."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.app_process import running_app
from tests.browser import chromium_page
from tests.monitor_sims import chatting

pytestmark = pytest.mark.browser
UI_TIMEOUT_MS = 60_000
HIT_TILE = "#m3-mon-headline .m3-kpi-gpu"
GREEN = "rgb(22, 163, 74)"  # --m3-gpu: the colour of GPU-served work
AXIS_LABELS = """(id) => [...document.querySelectorAll(`#${id} svg text`)].map(t => t.textContent.trim())"""


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    with running_app(tmp_path_factory.mktemp("monitor-look")) as app, chromium_page((1440, 900)) as page:
        app.wait_engine_ready()
        page.set_default_timeout(UI_TIMEOUT_MS)
        page.goto(app.url)
        page.get_by_role("tab", name="Monitor").click()
        page.wait_for_selector('#m3-mon-headline [data-engine-state="ok"]')
        engine = re.search(r"at (http://127\.0\.0\.1:\d+)", page.inner_text("#m3-mon-headline"))
        assert engine, page.inner_text("#m3-mon-headline")
        with chatting(engine.group(1)):
            yield page


def test_a_low_gpu_hit_rate_is_not_shown_in_large_green(page) -> None:
    value = page.locator(f"{HIT_TILE} .m3-kpi-value")
    expect(value).to_have_text(re.compile(r"\d+\.\d%"), timeout=UI_TIMEOUT_MS)  # after a recorder dump
    rate = float(value.inner_text().rstrip("%")) / 100
    assert rate < 0.2  # the single-GPU preset keeps 4 of 128 experts per layer on the GPU
    expect(page.locator(HIT_TILE)).to_have_class(re.compile(r"\bm3-hit-low\b"))
    expect(page.locator(f"{HIT_TILE} .m3-kpi-sub")).to_contain_text("low")
    assert value.evaluate("e => getComputedStyle(e).color") != GREEN


def test_the_legends_speak_words_and_the_time_axes_a_24_hour_clock(page) -> None:
    legend = page.locator("#m3-mon-cpu .m3-legend")
    expect(legend).to_contain_text("spare: more cores than expert threads")
    assert "--" not in legend.inner_text()
    assert "--" not in page.locator("#m3-mon-engine .m3-facts").inner_text()
    page.wait_for_selector("#m3-mon-cpu-load svg text")
    page.wait_for_function(f"({AXIS_LABELS})('m3-mon-cpu-load').some(t => /^\\d\\d:\\d\\d:\\d\\d$/.test(t))")
    labels = page.evaluate(AXIS_LABELS, "m3-mon-cpu-load")
    times = [t for t in labels if re.fullmatch(r"\d\d:\d\d:\d\d", t)]
    assert times and not [t for t in labels if re.fullmatch(r":\d\d", t)], labels
    assert all(int(t[:2]) < 24 for t in times)
