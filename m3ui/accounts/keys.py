"""API keys: what coding agents and scripts send to the gateway (m3ui/gateway/) instead of a password.

A key is `m3ui_<id>_<secret>`: the id (public, shown in lists) finds the row, and the SHA-256 of the whole key is
compared in constant time (hmac.compare_digest; an unknown id is compared against a dummy, so the time does not
say whether the id exists). A key is random enough that a fast hash is right: there is nothing to guess. The key
itself is shown once, at creation, and never stored or logged.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import sqlite3
import time
from dataclasses import dataclass, replace

from m3ui.accounts.store import AccountError, AccountStore

PREFIX = "m3ui_"
KEY_PATTERN = re.compile(r"m3ui_([0-9a-f]{12})_([A-Za-z0-9_-]{43})")
MAX_LABEL_CHARS = 64
MAX_EXPIRY_DAYS = 3650
LAST_USED_EVERY_S = 60.0  # a key used all the time writes its last-used time at most this often
_DUMMY_HASH = hashlib.sha256(b"no such key").hexdigest()
KEY_COLUMNS = ("api_keys.id, users.name, api_keys.label, api_keys.created_at, api_keys.last_used_at, "
               "api_keys.expires_at, api_keys.revoked_at")


@dataclass(frozen=True)
class ApiKey:
    id: str
    user: str
    label: str
    created_at: float
    last_used_at: float | None
    expires_at: float | None
    revoked_at: float | None

    def state(self, now: float | None = None) -> str:
        now = time.time() if now is None else now
        if self.revoked_at is not None:
            return "revoked"
        if self.expires_at is not None and self.expires_at <= now:
            return "expired"
        return "active"


def key_hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def check_label(label: str | None) -> str:
    label = (label or "").strip()
    if len(label) > MAX_LABEL_CHARS or any(not ch.isprintable() for ch in label):
        raise AccountError(f"a key's label is at most {MAX_LABEL_CHARS} printable characters")
    return label


class ApiKeyStore:
    def __init__(self, accounts: AccountStore) -> None:
        self.accounts = accounts
        self.db = accounts.db
        self._touched: dict[str, float] = {}

    def create(self, name: str, label: str | None = None, expires_days: int | None = None) -> tuple[ApiKey, str]:
        """A new key for the person `name`: the row and the key itself (shown once)."""
        user = self.accounts.require(name)
        if expires_days is not None and not 1 <= expires_days <= MAX_EXPIRY_DAYS:
            raise AccountError(f"--expires-days: give 1 to {MAX_EXPIRY_DAYS} days (or leave it out: no expiry)")
        label = check_label(label)
        now = time.time()
        expires = None if expires_days is None else now + expires_days * 86400
        while True:
            key_id, secret = secrets.token_hex(6), secrets.token_urlsafe(32)
            key = f"{PREFIX}{key_id}_{secret}"
            try:
                with self.db.transaction() as conn:
                    conn.execute("INSERT INTO api_keys (id, user_id, label, key_hash, created_at, expires_at) "
                                 "VALUES (?, ?, ?, ?, ?, ?)", (key_id, user.id, label, key_hash(key), now, expires))
            except sqlite3.IntegrityError:  # the id exists already (1 in 2^48): draw again
                continue
            return self.require(key_id), key

    def list(self, name: str | None = None) -> list[ApiKey]:
        """Newest first: one person's keys, or everyone's (name None)."""
        where, params = ("WHERE users.name = ?", (self.accounts.require(name).name,)) if name is not None \
            else ("", ())
        rows = self.db.query(f"SELECT {KEY_COLUMNS} FROM api_keys JOIN users ON users.id = api_keys.user_id "
                             f"{where} ORDER BY api_keys.created_at DESC", params)
        return [ApiKey(*row) for row in rows]

    def get(self, key_id: str) -> ApiKey | None:
        rows = self.db.query(f"SELECT {KEY_COLUMNS} FROM api_keys JOIN users ON users.id = api_keys.user_id "
                             "WHERE api_keys.id = ?", (key_id,))
        return ApiKey(*rows[0]) if rows else None

    def require(self, key_id: str) -> ApiKey:
        key = self.get(key_id.strip())
        if key is None:
            raise AccountError(f"no API key {key_id.strip()[:20]!r}")
        return key

    def revoke(self, key_id: str, by: str | None = None) -> ApiKey:
        """Revoke a key; `by` (a person's name) may revoke only their own, None is an admin."""
        key = self.require(key_id)
        if by is not None and key.user != self.accounts.require(by).name:
            raise AccountError(f"no API key {key_id.strip()[:20]!r}")  # another person's: as if it did not exist
        if key.revoked_at is None:
            with self.db.transaction() as conn:
                conn.execute("UPDATE api_keys SET revoked_at = ? WHERE id = ?", (time.time(), key.id))
        return self.require(key.id)

    def check(self, key: str) -> ApiKey | None:
        """The active key this is, of an enabled person (its last-used time noted), else None. The time taken
        does not depend on whether its id exists."""
        match = KEY_PATTERN.fullmatch(key)
        key_id = match.group(1) if match else ""
        rows = self.db.query("SELECT key_hash FROM api_keys WHERE id = ?", (key_id,)) if match else []
        stored = rows[0]["key_hash"] if rows else _DUMMY_HASH
        if not hmac.compare_digest(stored, key_hash(key)) or not rows:
            return None
        found = self.get(key_id)
        if found is None or found.state() != "active" or self.accounts.active(found.user) is None:
            return None
        return self._touched_now(found)

    def _touched_now(self, key: ApiKey) -> ApiKey:
        now = time.time()
        if now - self._touched.get(key.id, 0.0) < LAST_USED_EVERY_S:
            return key
        self._touched[key.id] = now
        with self.db.transaction() as conn:
            conn.execute("UPDATE api_keys SET last_used_at = ? WHERE id = ?", (now, key.id))
        return replace(key, last_used_at=now)
