"""Waiting on a fleet in tests: a condition polled until it holds, and the workers a router lists healthy."""

from __future__ import annotations

import time
from collections.abc import Callable

from launch.fleet.router_api import RouterApiError, list_workers


def until(condition: Callable[[], bool], timeout: float = 60.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out after {timeout:.0f} s: {what or condition}"
        time.sleep(0.1)


def healthy_workers(router: str) -> set[str]:
    """The URLs the router lists healthy (none while it does not answer)."""
    try:
        return {w.url for w in list_workers(router) if w.healthy}
    except RouterApiError:
        return set()
