"""The early requests sent for pages that asked for an answer (m3ui.client.early_request), until the answer's
handler takes its page's one. A page has at most one (a newer one cancels the older); a page's key is its live
ticket, a capability only that page knows, and the request is handed only to an answer of the same person.

An early request may also come after its answer started without it (the page's ask was held up): the answer
leaves a note of its question, and that request is not sent (or, sent meanwhile, is cancelled) instead of running
on."""

from __future__ import annotations

import threading
from collections import OrderedDict

from m3ui.client.early_request import EarlyRequest

MAX_PENDING = 64  # early requests waiting to be taken, over all pages (the oldest is cancelled for a new one)
# Early requests waiting for one person, over all their pages: a new one cancels their oldest, never someone
# else's, so one person cannot take every slot (and each runs on the engine until taken or expired)
MAX_PENDING_PER_PERSON = 4
MAX_LATE = 1024  # notes of answers that started before their early request came


class EarlyStarts:
    def __init__(self, limit: int = MAX_PENDING, per_person: int = MAX_PENDING_PER_PERSON) -> None:
        self._pending: OrderedDict[str, tuple[str | None, str, EarlyRequest]] = OrderedDict()
        self._late: OrderedDict[str, str] = OrderedDict()  # page -> the question its answer asked without one
        self._lock = threading.Lock()
        self._limit, self._per_person = limit, per_person

    def wanted(self, page: str, question: str) -> bool:
        """Whether a request for `question` is still worth sending: not when its answer started without it."""
        with self._lock:
            if self._late.get(page) != question:
                return True
            del self._late[page]
            return False

    def put(self, page: str, user: str | None, question: str, early: EarlyRequest) -> None:
        with self._lock:
            cancelled: list[EarlyRequest | None]
            if self._late.pop(page, None) == question:
                cancelled = [early]  # its answer is already on its way
            else:
                cancelled = [self._pending.pop(page, (None, "", None))[2]]
                self._pending[page] = (user, question, early)
                own = [p for p, (owner, _, _) in self._pending.items() if owner == user]
                for oldest in own[: max(0, len(own) - self._per_person)]:
                    cancelled.append(self._pending.pop(oldest)[2])
                while len(self._pending) > self._limit:
                    cancelled.append(self._pending.popitem(last=False)[1][2])
        for old in cancelled:
            if old is not None:
                old.cancel()

    def take(self, page: object, user: str | None, question: str) -> EarlyRequest | None:
        """The page's early request if it was sent for this person (else it is cancelled); None when none waits
        (one for `question` that comes later is then cancelled as it comes)."""
        if not isinstance(page, str) or not page:  # (an API client has no page)
            return None
        with self._lock:
            owner, _, early = self._pending.pop(page, (None, "", None))
            if early is None:
                self._late[page] = question
                self._late.move_to_end(page)
                while len(self._late) > MAX_LATE:
                    self._late.popitem(last=False)
        if early is None or owner == user:
            return early
        early.cancel()
        return None

    def __len__(self) -> int:
        with self._lock:
            return sum(1 for _, _, early in self._pending.values() if early.state == "open")
