"""Failed logins slow the next attempt down, per client address and per user name.

After FREE_FAILURES failures in a row, each further attempt must wait 2, 4, 8 ... seconds (at most
MAX_DELAY_S) after the last failure, or it is refused with 429 without looking at the password: 50 wrong
guesses then take minutes instead of a tenth of a second. A successful login clears both records. A user name
counts as the accounts match it (without case), so 'Alice' and 'ALICE' share alice's record. The Account tab's
password change counts its guesses of the current password here too (m3ui.web.password_change).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from m3ui.accounts.store import canonical_name

FREE_FAILURES = 4
MAX_DELAY_S = 300.0
MAX_TRACKED = 10_000  # records kept; the oldest is forgotten first, so memory stays bounded


@dataclass
class _Record:
    failures: int
    last_failure: float


class LoginThrottle:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._records: OrderedDict[str, _Record] = OrderedDict()

    @staticmethod
    def keys(client: str, user: str | None) -> list[str]:
        name = canonical_name(user or "")
        return [f"client:{client}"] + ([f"user:{name}"] if name else [])

    def delay(self, failures: int) -> float:
        return 0.0 if failures < FREE_FAILURES else min(MAX_DELAY_S, 2.0 ** (failures - FREE_FAILURES + 1))

    def wait_seconds(self, keys: list[str]) -> float:
        """How long these keys must still wait before a login is looked at (0: go ahead)."""
        now = self._clock()
        waits = [self.delay(r.failures) - (now - r.last_failure) for k in keys if (r := self._records.get(k))]
        return max([0.0, *waits])

    def failed(self, keys: list[str]) -> int:
        """Record a failure; returns the largest failure count among the keys."""
        now = self._clock()
        for key in keys:
            record = self._records.pop(key, None) or _Record(0, now)
            self._records[key] = _Record(record.failures + 1, now)
        while len(self._records) > MAX_TRACKED:
            self._records.popitem(last=False)
        return max(self._records[k].failures for k in keys)

    def succeeded(self, keys: list[str]) -> None:
        for key in keys:
            self._records.pop(key, None)
