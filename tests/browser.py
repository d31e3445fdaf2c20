"""Real Chromium through Playwright (Debian's /usr/bin/chromium; Playwright's own download is not used)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


@contextmanager
def chromium_page(viewport: tuple[int, int] = (1280, 900)) -> Iterator[object]:
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


@contextmanager
def launched_chromium() -> Iterator[object]:
    """One Chromium for several contexts (each its own cookies and storage: a device, or another person)."""
    if not os.path.exists(CHROMIUM):
        pytest.skip("Debian's chromium is not installed (scripts/test.sh installs it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()
