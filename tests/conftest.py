"""Test-wide settings: offline, and the repo root importable."""

import os
import signal
import sys
from pathlib import Path

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

# Real-Chromium tests drive timers, websockets and an app process on a 2-core CI machine busy with the rest of the
# suite: one that fails is run once more (pytest-rerunfailures reports it as a rerun) and fails the run only if it
# fails again. Every other test gets no second chance.
BROWSER_RERUNS = 1


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("browser") and not item.get_closest_marker("flaky"):
            item.add_marker(pytest.mark.flaky(reruns=BROWSER_RERUNS))
