"""Test-wide settings (offline, the repo root importable) and the fixtures the browser tests share: `app`, one
`python app.py` on the simulated engine, and `page`, a fresh Chromium page on it with the engine ready.
A module that needs another app (accounts, a TMPDIR) or page (a viewport, a tab) defines its own of that name."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

ROOT = Path(__file__).resolve().parent.parent

# A run started in the background (`cmd &`, nohup) inherits SIGINT ignored, and an ignored signal stays ignored
# across exec: every app and CLI the tests start would then shrug off the Ctrl-C the tests send it. A handled
# signal is reset to its default in a child, so handling it here gives the children a real Ctrl-C.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.app_process import RunningApp, running_app  # noqa: E402
from tests.browser import ready_page, stop_shared_browser  # noqa: E402

if TYPE_CHECKING:
    from playwright.sync_api import Page

# Real-Chromium tests drive timers, websockets and an app process on a 2-core CI machine busy with the rest of the
# suite: one that fails is run once more (pytest-rerunfailures reports it as a rerun) and fails the run only if it
# fails again. Every other test gets no second chance.
BROWSER_RERUNS = 1


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("browser") and not item.get_closest_marker("flaky"):
            item.add_marker(pytest.mark.flaky(reruns=BROWSER_RERUNS))


@pytest.fixture(autouse=True, scope="module")
def _chromium_closed_after_each_module() -> Iterator[None]:
    """The process's one Chromium lives for a module's tests at most (see tests.browser.stop_shared_browser): a
    pytest-xdist worker runs browser and asyncio tests one after the other."""
    yield
    stop_shared_browser()


@pytest.fixture(scope="session")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningApp]:
    """`python app.py` on the simulated engine, its engine ready: one for every module that takes this default (in
    a test run, or in each pytest-xdist worker). Their tests open pages, chat and read figures as deltas; none
    signs in, changes settings or stops the engine (a module that does starts an app of its own)."""
    with running_app(tmp_path_factory.mktemp("shared-app")) as running:
        running.wait_engine_ready()
        yield running


@pytest.fixture
def page(app: RunningApp) -> Iterator[Page]:
    """A fresh Chromium page on the app, its header saying the engine is ready."""
    with ready_page(app.url) as fresh:
        yield fresh
