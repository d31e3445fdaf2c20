"""Tokens held for requests in flight, per person: the part of a daily quota that running requests may still use.

A request reserves its prompt (counted high) plus its `max_tokens` before the engine starts, capped at what is left
of the quota; it settles the real figure when it ends. The holds live in this process (the one that sends the
requests); the recorded usage lives in the accounts database, so every way in (browser, tools, API keys) meets
the same day total.
"""

from __future__ import annotations

import itertools
import threading
import weakref

from m3ui.accounts.sqlite_db import SqliteDb


class HeldTokens:
    def __init__(self) -> None:
        self._held: dict[int, dict[int, int]] = {}  # user id -> reservation id -> tokens
        self._ids = itertools.count(1)
        self.lock = threading.RLock()  # taken around "read the day's usage, add a hold" so two cannot both fit

    def add(self, user_id: int, tokens: int) -> int:
        with self.lock:
            rid = next(self._ids)
            self._held.setdefault(user_id, {})[rid] = tokens
            return rid

    def release(self, user_id: int, rid: int) -> None:
        with self.lock:
            holds = self._held.get(user_id, {})
            holds.pop(rid, None)
            if not holds:
                self._held.pop(user_id, None)

    def total(self, user_id: int) -> int:
        with self.lock:
            return sum(self._held.get(user_id, {}).values())


_BY_DB: weakref.WeakKeyDictionary[SqliteDb, HeldTokens] = weakref.WeakKeyDictionary()
_BY_DB_LOCK = threading.Lock()


def held_tokens(db: SqliteDb) -> HeldTokens:
    """The one set of holds of this accounts database in this process (every ledger over it shares them)."""
    with _BY_DB_LOCK:
        held = _BY_DB.get(db)
        if held is None:
            held = _BY_DB[db] = HeldTokens()
        return held
