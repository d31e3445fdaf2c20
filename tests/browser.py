"""Real Chromium through Playwright (Debian's /usr/bin/chromium; Playwright's own download is not used), and the
page every browser test starts from: the app open, its header saying the engine is ready (`ready_page`; the
`page` fixture in tests/conftest.py gives one on the module's app)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Page

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


@contextmanager
def chromium_page(viewport: tuple[int, int] = (1280, 900)) -> Iterator[Page]:
    """A fresh browser profile and page; skips (with the reason) only when Chromium is not installed."""
    if not os.path.exists(CHROMIUM):
        pytest.skip("Debian's chromium is not installed (scripts/test.sh installs it)")
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="m3ui-chromium-") as profile, sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            profile, executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True,
            viewport={"width": viewport[0], "height": viewport[1]},
        )
        try:
            yield context.pages[0] if context.pages else context.new_page()
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
