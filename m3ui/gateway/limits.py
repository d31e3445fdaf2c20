"""Per-key limits: requests at once, and requests per minute (a sliding window). A refusal says how many seconds
until a retry can pass (the Retry-After header)."""

from __future__ import annotations

import math
import time
from collections import deque
from dataclasses import dataclass

DEFAULT_CONCURRENCY = 8
DEFAULT_PER_MINUTE = 120
WINDOW_S = 60.0


def parse_limits(text: str) -> tuple[int, int]:
    """"AT_ONCE/PER_MINUTE" as typed (--gateway-key-limits), e.g. "8/120"."""
    at_once, _, per_minute = text.partition("/")
    if not (at_once.strip().isdigit() and per_minute.strip().isdigit()) or min(int(at_once), int(per_minute)) < 1:
        raise ValueError("give two whole numbers >= 1, requests at once / per minute, e.g. 8/120")
    return int(at_once), int(per_minute)


@dataclass(frozen=True)
class LimitRefusal:
    message: str
    retry_after_s: int


class KeyLimits:
    """Used from the event loop only (no lock needed)."""

    def __init__(self, concurrency: int = DEFAULT_CONCURRENCY, per_minute: int = DEFAULT_PER_MINUTE) -> None:
        self.concurrency, self.per_minute = concurrency, per_minute
        self._running: dict[str, int] = {}
        self._recent: dict[str, deque[float]] = {}

    def enter(self, key_id: str, now: float | None = None) -> LimitRefusal | None:
        """Count a request in, or say why not (then nothing is counted)."""
        now = time.monotonic() if now is None else now
        recent = self._recent.setdefault(key_id, deque())
        while recent and recent[0] <= now - WINDOW_S:
            recent.popleft()
        if len(recent) >= self.per_minute:
            wait = math.ceil(recent[0] + WINDOW_S - now)
            return LimitRefusal(f"rate limit: {self.per_minute} requests per minute for this key; retry in "
                                f"{wait} s", max(1, wait))
        if self._running.get(key_id, 0) >= self.concurrency:
            return LimitRefusal(f"concurrency limit: {self.concurrency} requests at once for this key; retry when "
                                "one ends", 1)
        recent.append(now)
        self._running[key_id] = self._running.get(key_id, 0) + 1
        return None

    def leave(self, key_id: str) -> None:
        left = self._running.get(key_id, 1) - 1
        if left > 0:
            self._running[key_id] = left
        else:
            self._running.pop(key_id, None)
