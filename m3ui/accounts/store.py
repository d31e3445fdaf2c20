"""AccountStore: the users, their roles and passwords, and the app-wide account settings (sign-up)."""

from __future__ import annotations

import hashlib
import re
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from m3ui.accounts.passwords import MAX_PASSWORD_CHARS, dummy_hash, hash_password, password_problem, verify_password
from m3ui.accounts.sqlite_db import DB_FILE_NAME, SqliteDb

Role = Literal["user", "admin"]
ROLES: tuple[Role, ...] = ("user", "admin")
NAME_PATTERN = re.compile(r"[a-z0-9][a-z0-9._@-]{0,63}")
# Names the app itself gives: the admin password's user and the passwordless loopback admin.
RESERVED_NAMES = ("admin", "local-admin")
SIGNUP_KEY = "signup_enabled"


class AccountError(ValueError):
    """A request the accounts refuse, with a message fit to show as is."""


@dataclass(frozen=True)
class User:
    id: int
    name: str
    role: Role
    enabled: bool
    daily_token_quota: int | None
    created_at: float
    last_login_at: float | None

    @property
    def is_admin(self) -> bool:
        return self.role == "admin"


def canonical_name(name: str) -> str:
    """Names are case-insensitive: 'Alice' and 'alice' are one account."""
    return name.strip().lower()


def check_name(name: str) -> str:
    canonical = canonical_name(name)
    if not NAME_PATTERN.fullmatch(canonical):
        raise AccountError(f"user name {name[:70]!r}: use 1-64 of a-z 0-9 . _ @ - (starting with a letter or "
                           "digit)")
    if canonical in RESERVED_NAMES:
        raise AccountError(f"user name {canonical!r} is reserved (the admin password's user)")
    return canonical


def check_role(role: str) -> Role:
    if role not in ROLES:
        raise AccountError(f"role {role!r}: use one of {', '.join(ROLES)}")
    return role


def check_password(password: str) -> str:
    if problem := password_problem(password):
        raise AccountError(problem)
    return password


def _user(row: sqlite3.Row) -> User:
    return User(row["id"], row["name"], row["role"], bool(row["enabled"]), row["daily_token_quota"],
                row["created_at"], row["last_login_at"])


USER_COLUMNS = "id, name, role, enabled, daily_token_quota, created_at, last_login_at"


class AccountStore:
    def __init__(self, db: SqliteDb) -> None:
        self.db = db

    @classmethod
    def open(cls, data_dir: Path) -> AccountStore:
        return cls(SqliteDb(data_dir / DB_FILE_NAME))

    def close(self) -> None:
        self.db.close()

    # --- reading -----------------------------------------------------------------------------------------

    def get(self, name: str) -> User | None:
        rows = self.db.query(f"SELECT {USER_COLUMNS} FROM users WHERE name = ?", (canonical_name(name),))
        return _user(rows[0]) if rows else None

    def get_by_id(self, user_id: int) -> User | None:
        rows = self.db.query(f"SELECT {USER_COLUMNS} FROM users WHERE id = ?", (user_id,))
        return _user(rows[0]) if rows else None

    def list(self) -> list[User]:
        return [_user(row) for row in self.db.query(f"SELECT {USER_COLUMNS} FROM users ORDER BY name")]

    def count(self, role: Role | None = None) -> int:
        sql = "SELECT COUNT(*) FROM users WHERE enabled = 1" + (" AND role = ?" if role else "")
        return int(self.db.query(sql, (role,) if role else ())[0][0])

    def active(self, name: str) -> User | None:
        """The user when the account exists and is enabled (what every signed-in request is checked against)."""
        user = self.get(name)
        return user if user is not None and user.enabled else None

    def authenticate(self, name: str, password: str) -> User | None:
        """The enabled user whose password this is (its last login recorded), else None. Takes the same time
        whether or not the name exists."""
        rows = self.db.query(f"SELECT {USER_COLUMNS}, password_hash FROM users WHERE name = ?",
                             (canonical_name(name),))
        if not rows:
            verify_password(password, dummy_hash())
            return None
        if not verify_password(password, rows[0]["password_hash"]) or not rows[0]["enabled"]:
            return None
        now = time.time()
        with self.db.transaction() as conn:
            conn.execute("UPDATE users SET last_login_at = ? WHERE id = ?", (now, rows[0]["id"]))
        return _user(rows[0])

    # --- changing ----------------------------------------------------------------------------------------

    def add(self, name: str, password: str, role: str = "user") -> User:
        return self._insert(check_name(name), hash_password(check_password(password)), check_role(role))

    def seed(self, name: str, password: str) -> tuple[User, str]:
        """An account for a `--chat-user NAME:PASSWORD`: created (role user) when missing, its password set to
        this one when it differs; never re-enabled. Its password is not held to the length rule (the option
        took any before accounts existed). Returns the user and what was done."""
        if len(password) > MAX_PASSWORD_CHARS or not password:
            raise AccountError(f"--chat-user {name[:70]!r}: the password must have 1-{MAX_PASSWORD_CHARS} characters")
        existing = self.get(name)
        if existing is None:
            return self._insert(check_name(name), hash_password(password), "user"), "created"
        if self.password_matches(name, password):
            return existing, "unchanged"
        return self._update(name, "password_hash = ?", (hash_password(password),)), "password set"

    def _insert(self, canonical: str, hashed: str, role: Role) -> User:
        try:
            with self.db.transaction() as conn:
                conn.execute("INSERT INTO users (name, role, enabled, password_hash, created_at) VALUES "
                             "(?, ?, 1, ?, ?)", (canonical, role, hashed, time.time()))
        except sqlite3.IntegrityError:
            raise AccountError(f"user {canonical!r} exists already") from None
        return self.require(canonical)

    def set_password(self, name: str, password: str) -> User:
        hashed = hash_password(check_password(password))
        return self._update(name, "password_hash = ?", (hashed,))

    def set_enabled(self, name: str, enabled: bool) -> User:
        if not enabled:
            self._keep_an_admin(name, "disable")
        return self._update(name, "enabled = ?", (int(enabled),))

    def set_role(self, name: str, role: str) -> User:
        role = check_role(role)
        if role != "admin":
            self._keep_an_admin(name, "make a user")
        return self._update(name, "role = ?", (role,))

    def set_quota(self, name: str, daily_tokens: int | None) -> User:
        if daily_tokens is not None and daily_tokens < 0:
            raise AccountError("a daily token quota is a whole number >= 0 (or none)")
        return self._update(name, "daily_token_quota = ?", (daily_tokens,))

    def password_stamp(self, name: str) -> str | None:
        """A digest that changes whenever the account's password does (None: no such account)."""
        rows = self.db.query("SELECT password_hash FROM users WHERE name = ?", (canonical_name(name),))
        return hashlib.sha256(rows[0]["password_hash"].encode()).hexdigest()[:16] if rows else None

    def password_matches(self, name: str, password: str) -> bool:
        rows = self.db.query("SELECT password_hash FROM users WHERE name = ?", (canonical_name(name),))
        return bool(rows) and verify_password(password, rows[0]["password_hash"])

    # --- settings ----------------------------------------------------------------------------------------

    def setting(self, key: str) -> str | None:
        rows = self.db.query("SELECT value FROM settings WHERE key = ?", (key,))
        return rows[0]["value"] if rows else None

    def set_setting(self, key: str, value: str | None) -> None:
        with self.db.transaction() as conn:
            if value is None:
                conn.execute("DELETE FROM settings WHERE key = ?", (key,))
            else:
                conn.execute("INSERT INTO settings VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = "
                             "excluded.value", (key, value))

    @property
    def signup_enabled(self) -> bool:
        """Off unless an admin turned it on."""
        return self.setting(SIGNUP_KEY) == "1"

    def set_signup(self, enabled: bool) -> None:
        self.set_setting(SIGNUP_KEY, "1" if enabled else "0")

    # --- helpers -----------------------------------------------------------------------------------------

    def require(self, name: str) -> User:
        """The user, or AccountError saying there is none."""
        user = self.get(name)
        if user is None:
            raise AccountError(f"no user {canonical_name(name)[:70]!r}")
        return user

    def _update(self, name: str, assignment: str, params: tuple[object, ...]) -> User:
        user = self.require(name)
        with self.db.transaction() as conn:
            conn.execute(f"UPDATE users SET {assignment} WHERE id = ?", (*params, user.id))
        return self.require(name)

    def _keep_an_admin(self, name: str, what: str) -> None:
        """Accounts never lose their last enabled admin by accident (the admin password may not exist)."""
        user = self.require(name)
        if user.is_admin and user.enabled and self.count("admin") <= 1:
            raise AccountError(f"cannot {what} {user.name!r}: it is the last enabled admin account")
