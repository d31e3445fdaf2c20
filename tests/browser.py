"""Real Chromium through Playwright (Debian's /usr/bin/chromium; Playwright's own download is not used), and the
page every browser test starts from: the app open, its header saying the engine is ready (`ready_page`; the
`page` fixture in tests/conftest.py gives one on the shared app)."""

from __future__ import annotations

import atexit
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page, Playwright

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


_running: list[tuple[Playwright, Browser]] = []  # this process's Chromium, started at the first page


def shared_browser() -> Browser:
    """One Chromium for the whole process (started again if it died): starting one took 4-5 s per page on a
    loaded 2-core machine, a new context in a running one under 1 s. Playwright's sync API allows one instance per
    thread, so every page of the tests comes from here. Skips (with the reason) only when Chromium is missing."""
    if not os.path.exists(CHROMIUM):
        pytest.skip("Debian's chromium is not installed (scripts/test.sh installs it)")
    if _running and _running[0][1].is_connected():
        return _running[0][1]
    if _running:  # Chromium died: a new one on the same Playwright
        playwright = _running.pop()[0]
    else:
        from playwright.sync_api import sync_playwright

        playwright = sync_playwright().start()
        atexit.register(stop_shared_browser)
    _running.append((playwright, playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS,
                                                            headless=True)))
    return _running[0][1]


def stop_shared_browser() -> None:
    """Close it, and Playwright's event loop with it: while that loop runs in this thread, any later test of the
    process calling asyncio.run() fails ("cannot be called from a running event loop")."""
    while _running:
        playwright, browser = _running.pop()
        if browser.is_connected():
            browser.close()
        playwright.stop()


@contextmanager
def chromium_page(viewport: tuple[int, int] = (1280, 900)) -> Iterator[Page]:
    """A page in a fresh browser context (its own storage and cookies, as a new profile has)."""
    context = shared_browser().new_context(viewport={"width": viewport[0], "height": viewport[1]})
    try:
        yield context.new_page()
    finally:
        context.close()


UI_TIMEOUT_MS = 60_000  # a loaded 2-core machine runs the app, the engine and Chromium at once


def wait_engine_ready(page: Page) -> None:
    """The header says so (the page's own view of the engine)."""
    page.wait_for_selector("#m3-header")
    page.wait_for_function("document.querySelector('#m3-header').innerText.includes('ready')")


@contextmanager
def ready_page(url: str, viewport: tuple[int, int] = (1280, 900), timeout_ms: int = UI_TIMEOUT_MS) -> Iterator[Page]:
    """A fresh Chromium page on the app at `url`, once its header says the engine is ready."""
    with chromium_page(viewport) as page:
        page.set_default_timeout(timeout_ms)
        page.goto(url)
        wait_engine_ready(page)
        yield page


@contextmanager
def browser_contexts() -> Iterator[Browser]:
    """The shared Chromium, for several contexts (each its own cookies and storage: a device, or another person);
    the contexts opened meanwhile are closed after."""
    browser = shared_browser()
    before = set(browser.contexts)
    try:
        yield browser
    finally:
        for context in browser.contexts:
            if context not in before:
                context.close()


def open_tab(page: Page, name: str, attempts: int = 5) -> None:
    """Click a tab; on a narrow screen Gradio moves the last tabs into its "More tabs" menu. Gradio measures the
    tabs again when the page's size changes (a full-page screenshot resizes it for a moment) and closes that menu:
    it is opened again until the tab is clicked."""
    tab = page.get_by_role("tab", name=name)
    if tab.count():
        tab.click()
        return
    from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

    item = page.locator(".overflow-dropdown button", has_text=name)
    for attempt in range(attempts):
        if not item.is_visible():
            page.get_by_role("button", name="More tabs").click()
        try:
            item.click(timeout=5_000)
            return
        except PlaywrightTimeoutError:
            if attempt == attempts - 1:
                raise


def sign_in(page: Page, url: str, person: tuple[str, ...]) -> None:
    """Open `url`, sign in on m3ui's login page as (name, password, ...), and wait for the chat or admin page."""
    page.goto(url)
    page.locator("input[type=password]").wait_for()
    page.locator("input[type=text]").fill(person[0])
    page.locator("input[type=password]").fill(person[1])
    page.keyboard.press("Enter")
    page.locator("#m3-header, #m3-admin-status").first.wait_for()
