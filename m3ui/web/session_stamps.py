"""Which password each Gradio session was signed in with, so that a changed password ends the sessions before it.

A session is stamped (a digest of its account's password hash) the first time the session guard sees it, right
after its login; a request whose session carries another stamp than the account's now is ended. So a password
changed anywhere, in this app or by `python -m m3ui.users passwd` in another process, ends the older sessions
within CHECK_S. The account's stamp is read at most once per CHECK_S per user (a page's bursts cost one read).
The session that changed its own password is stamped anew (`renew`): it stays signed in.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from m3ui.accounts.store import canonical_name

CHECK_S = 1.0
# (user name, whether the app is the admin app) -> None when its sessions may not go on, else its password's stamp
SessionCheck = Callable[[str, bool], str | None]


class SessionStamps:
    def __init__(self, check: SessionCheck) -> None:
        self._check = check
        self._lock = threading.Lock()  # renew() comes from a handler's thread
        self._by_token: dict[str, str] = {}
        self._checked: dict[tuple[str, bool], tuple[str, float]] = {}  # (user, admin app) -> (stamp, checked at)

    def current(self, user: str, admin_app: bool, now: float) -> str | None:
        """The account's stamp (None: its sessions may not go on). Only a yes is remembered: a no ends the
        sessions, and a new login (after the account is enabled again) must not be ended by a stale no."""
        key = (user, admin_app)
        with self._lock:
            known = self._checked.get(key)
        if known is not None and now - known[1] <= CHECK_S:
            return known[0]
        stamp = self._check(user, admin_app)
        with self._lock:
            if stamp is None:
                self._checked.pop(key, None)
            else:
                if len(self._checked) > 10_000:
                    self._checked.clear()
                self._checked[key] = (stamp, now)
        return stamp

    def matches(self, token: str, stamp: str) -> bool:
        """Whether the session was signed in with this password (a session seen first is stamped with it)."""
        with self._lock:
            return self._by_token.setdefault(token, stamp) == stamp

    def renew(self, token: str, user: str) -> None:
        """The session `token` of `user` changed the password: it is stamped anew at its next request."""
        account = canonical_name(user)
        with self._lock:
            self._by_token.pop(token, None)
            for key in [key for key in self._checked if canonical_name(key[0]) == account]:
                del self._checked[key]

    def forget_except(self, held: set[str]) -> None:
        with self._lock:
            self._by_token = {t: s for t, s in self._by_token.items() if t in held}

    def __len__(self) -> int:
        return len(self._by_token)
