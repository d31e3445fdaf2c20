"""Login sessions of both apps, one row each in the accounts database: who, which app, when, and a stamp of the
password it was signed in with. The token itself is only in the browser's cookie; the row keeps its SHA-256, so a
copy of the database signs nobody in. Ending a session is deleting its row: every process sharing the file sees it
at once (a `python -m m3ui.users passwd` included).
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

from m3ui.accounts.sqlite_db import SqliteDb
from m3ui.accounts.store import canonical_name

MAX_PER_USER = 64  # sessions kept per user and app; a new login past it ends the oldest (disk stays bounded)
COOKIE_ID_KEY = "session_cookie_id"


@dataclass(frozen=True)
class Session:
    user: str  # the canonical name ("admin" for the admin password)
    app: str  # "chat" or "admin"
    created_at: float  # wall time: a session outlives a restart of the app
    stamp: str


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class SessionStore:
    def __init__(self, db: SqliteDb, clock: Callable[[], float] = time.time) -> None:
        self.db, self.clock = db, clock

    def cookie_id(self) -> str:
        """A random id of this database, for the cookie names: two apps on one host (browsers share cookies
        across ports) keep apart unless they share the database, and then their sessions are the same."""
        with self.db.transaction() as conn:
            row = conn.execute("SELECT value FROM settings WHERE key = ?", (COOKIE_ID_KEY,)).fetchone()
            if row is not None:
                return str(row[0])
            made = secrets.token_hex(4)
            conn.execute("INSERT INTO settings (key, value) VALUES (?, ?)", (COOKIE_ID_KEY, made))
            return made

    def start(self, user: str, app: str, stamp: str, max_age_s: float) -> str:
        """A new session (its token, for the cookie). Sessions past `max_age_s` and the user's oldest past
        MAX_PER_USER are deleted on the way."""
        token, now, name = secrets.token_urlsafe(32), self.clock(), canonical_name(user)
        with self.db.transaction() as conn:
            conn.execute("DELETE FROM sessions WHERE created_at < ?", (now - max_age_s,))
            conn.execute("INSERT INTO sessions VALUES (?, ?, ?, ?, ?)", (_hash(token), name, app, now, stamp))
            conn.execute("DELETE FROM sessions WHERE token_hash IN (SELECT token_hash FROM sessions WHERE user = ? "
                         "AND app = ? ORDER BY created_at DESC LIMIT -1 OFFSET ?)", (name, app, MAX_PER_USER))
        return token

    def find(self, token: str) -> Session | None:
        rows = self.db.query("SELECT user, app, created_at, password_stamp FROM sessions WHERE token_hash = ?",
                             (_hash(token),))
        return Session(*rows[0]) if rows else None

    def end(self, token: str) -> bool:
        with self.db.transaction() as conn:
            return conn.execute("DELETE FROM sessions WHERE token_hash = ?", (_hash(token),)).rowcount > 0

    def end_user(self, user: str, app: str | None = None, keep: str | None = None) -> int:
        """End `user`'s sessions (in `app`, else in both) but the one of the token `keep`; how many."""
        kept = _hash(keep) if keep is not None else ""
        with self.db.transaction() as conn:
            return conn.execute("DELETE FROM sessions WHERE user = ? AND (? IS NULL OR app = ?) AND token_hash != ?",
                                (canonical_name(user), app, app, kept)).rowcount

    def restamp(self, token: str, user: str, stamp: str) -> None:
        """`user`'s session `token` changed its own password: it goes on under the new one."""
        with self.db.transaction() as conn:
            conn.execute("UPDATE sessions SET password_stamp = ? WHERE token_hash = ? AND user = ?",
                         (stamp, _hash(token), canonical_name(user)))
