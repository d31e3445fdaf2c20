"""The early requests sent for pages that asked for an answer (m3ui.client.early_request), until the answer's
handler takes its page's one. A page has at most one (a newer one cancels the older); a page's key is its live
ticket, a capability only that page knows, and the request is handed only to an answer of the same person."""

from __future__ import annotations

import threading
from collections import OrderedDict

from m3ui.client.early_request import EarlyRequest

MAX_PENDING = 64  # early requests waiting to be taken, over all pages (the oldest is cancelled for a new one)


class EarlyStarts:
    def __init__(self, limit: int = MAX_PENDING) -> None:
        self._pending: OrderedDict[str, tuple[str | None, EarlyRequest]] = OrderedDict()
        self._lock = threading.Lock()
        self._limit = limit

    def put(self, page: str, user: str | None, early: EarlyRequest) -> None:
        with self._lock:
            cancelled = [self._pending.pop(page, (None, None))[1]]
            self._pending[page] = (user, early)
            while len(self._pending) > self._limit:
                cancelled.append(self._pending.popitem(last=False)[1][1])
        for old in cancelled:
            if old is not None:
                old.cancel()

    def take(self, page: object, user: str | None) -> EarlyRequest | None:
        """The page's early request if it was sent for this person (else it is cancelled); None when none waits."""
        if not isinstance(page, str):
            return None
        with self._lock:
            owner, early = self._pending.pop(page, (None, None))
        if early is None or owner == user:
            return early
        early.cancel()
        return None

    def __len__(self) -> int:
        with self._lock:
            return sum(1 for _, early in self._pending.values() if early.state == "open")
