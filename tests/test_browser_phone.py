"""The app at a phone's 390×844 in real Chromium against `python app.py` on the simulated engine: the header stays
on screen when a text box takes the focus, and the Monitor's heatmap and tables can be read whole (they scroll
inside their panel; nothing is cut off or squeezed out of legibility)."""

from __future__ import annotations

import re

import pytest

from tests.browser import ready_page
from tests.monitor_sims import chat

pytestmark = pytest.mark.browser
PHONE = (390, 844)
HEATMAP = "#m3-mon-experts img[data-activations]"
SIM_EXPERTS = 128  # routed experts per layer of the model the simulated engine serves
# Whether every element `selector` matches can be seen whole: it fits inside the page's width, or the nearest box
# that would cut it lets the user scroll to the rest.
READABLE = """(selector) => [...document.querySelectorAll(selector)].map(element => {
  const box = element.getBoundingClientRect();
  for (let outer = element.parentElement; outer; outer = outer.parentElement) {
    const overflow = getComputedStyle(outer).overflowX;
    if (overflow === 'auto' || overflow === 'scroll') return 'scrolls';
    const edge = outer.getBoundingClientRect();
    if (overflow !== 'visible' && (box.right > edge.right + 1 || box.left < edge.left - 1)) return 'cut off';
  }
  return box.right <= window.innerWidth + 1 ? 'fits' : 'past the screen';
})"""


@pytest.fixture
def page(app):
    with ready_page(app.url, PHONE) as page:
        yield page


def test_the_header_stays_on_screen_when_a_text_box_at_the_bottom_takes_the_focus(page):
    page.get_by_role("tab", name="Tools").click()
    box = page.locator("#m3-tools-message textarea")
    box.focus()
    # The keyboard takes half the screen and the phone scrolls the box up into what is left.
    box.evaluate("element => element.scrollIntoView({block: 'start'})")
    assert page.evaluate("window.scrollY") > 200  # the page did scroll: the header could have gone with it
    header = page.locator("#m3-header").bounding_box()
    assert header["y"] >= 0 and header["y"] + header["height"] <= PHONE[1]
    assert header["height"] <= PHONE[1] / 6, header  # two short lines, not a quarter of the screen
    assert box.bounding_box()["y"] >= header["y"] + header["height"]  # the box is not hidden under the header
    status = page.locator("#m3-header .m3-status").bounding_box()
    assert status["x"] + status["width"] <= PHONE[0]


def test_the_monitor_heatmap_and_tables_are_readable_whole(page):
    page.get_by_role("tab", name="Monitor").click()
    page.wait_for_selector('#m3-mon-headline [data-engine-state="ok"]')
    engine = re.search(r"at (http://127\.0\.0\.1:\d+)", page.inner_text("#m3-mon-headline"))
    assert engine, page.inner_text("#m3-mon-headline")
    for _ in range(3):
        chat(engine.group(1), max_tokens=60)
    page.wait_for_function(f"(document.querySelector('{HEATMAP}')?.dataset.activations ?? 0) > 0")
    page.wait_for_selector("#m3-mon-rankings .m3-table")
    assert page.locator(HEATMAP).bounding_box()["width"] >= 3 * SIM_EXPERTS  # 3 px an expert at least
    seen = {selector: page.evaluate(READABLE, selector)
            for selector in (".m3-heatmap-grid", "#m3-mon-rankings .m3-table")}
    assert all(verdicts and set(verdicts) <= {"fits", "scrolls"} for verdicts in seen.values()), seen
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE[0]  # the page itself never scrolls sideways
