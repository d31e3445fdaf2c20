"""UsageLedger: tokens, requests and engine time per user per day (UTC), and the daily token quota check.

A quota is the user's own `daily_token_quota` when set, else its role's (setting `quota.<role>`); none means
no limit. It counts prompt + completion tokens of the day so far, checked before a request is sent.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime

from m3ui.accounts.store import AccountError, AccountStore, Role, User, check_role

ROLE_QUOTA_KEY = "quota.{role}"


def parse_quota(text: str | None) -> int | None:
    """A daily token quota as typed (CLI, admin form): empty or "none" is no quota, else a whole number."""
    text = (text or "").strip().replace(",", "").replace("_", "")
    if not text or text.lower() == "none":
        return None
    if not text.isdigit():
        raise AccountError(f"quota {text[:20]!r}: give a whole number of tokens per day, or none")
    return int(text)


def local_time(at: float | None) -> str:
    """A created/last-login time as the tables show it."""
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(at)) if at else "never"


def utc_day(at: float | None = None) -> str:
    return datetime.fromtimestamp(time.time() if at is None else at, UTC).strftime("%Y-%m-%d")


@dataclass(frozen=True)
class DayUsage:
    user: str
    day: str
    prompt_tokens: int
    completion_tokens: int
    requests: int
    engine_seconds: float

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True)
class AnswerUsage:
    """What one finished answer cost (token counts the engine did not report count as 0)."""

    prompt_tokens: int
    completion_tokens: int
    engine_seconds: float


class UsageLedger:
    def __init__(self, accounts: AccountStore) -> None:
        self.accounts = accounts
        self.db = accounts.db

    def record(self, name: str, usage: AnswerUsage, at: float | None = None) -> None:
        """Add one answer to the user's day; a name without an account (the admin password's) is not counted."""
        user = self.accounts.get(name)
        if user is None:
            return
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT INTO usage VALUES (?, ?, ?, ?, 1, ?) ON CONFLICT(user_id, day) DO UPDATE SET "
                "prompt_tokens = prompt_tokens + excluded.prompt_tokens, completion_tokens = completion_tokens + "
                "excluded.completion_tokens, requests = requests + 1, engine_seconds = engine_seconds + "
                "excluded.engine_seconds",
                (user.id, utc_day(at), max(0, usage.prompt_tokens), max(0, usage.completion_tokens),
                 max(0.0, usage.engine_seconds)))

    def days(self, name: str | None = None, limit: int = 400) -> list[DayUsage]:
        """Newest first: one user's days, or everyone's (name None)."""
        where, params = ("WHERE users.name = ?", (name.strip().lower(),)) if name is not None else ("", ())
        rows = self.db.query(
            "SELECT users.name, day, prompt_tokens, completion_tokens, requests, engine_seconds FROM usage "
            f"JOIN users ON users.id = usage.user_id {where} ORDER BY day DESC, users.name LIMIT ?",
            (*params, limit))
        return [DayUsage(*row) for row in rows]

    def tokens_today(self, user: User, at: float | None = None) -> int:
        rows = self.db.query("SELECT prompt_tokens + completion_tokens FROM usage WHERE user_id = ? AND day = ?",
                             (user.id, utc_day(at)))
        return int(rows[0][0]) if rows else 0

    # --- quotas ------------------------------------------------------------------------------------------

    def role_quota(self, role: Role) -> int | None:
        value = self.accounts.setting(ROLE_QUOTA_KEY.format(role=check_role(role)))
        return int(value) if value is not None else None

    def set_role_quota(self, role: str, daily_tokens: int | None) -> None:
        if daily_tokens is not None and daily_tokens < 0:
            raise AccountError("a daily token quota is a whole number >= 0 (or none)")
        self.accounts.set_setting(ROLE_QUOTA_KEY.format(role=check_role(role)),
                                  None if daily_tokens is None else str(daily_tokens))

    def quota_of(self, user: User) -> int | None:
        return user.daily_token_quota if user.daily_token_quota is not None else self.role_quota(user.role)

    def refusal(self, name: str | None, at: float | None = None) -> str | None:
        """Why this user may not send another request today (quota reached), or None."""
        user = self.accounts.get(name) if name else None
        if user is None:
            return None
        quota = self.quota_of(user)
        if quota is None:
            return None
        used = self.tokens_today(user, at)
        if used < quota:
            return None
        return (f"Daily token quota reached: {used:,} of {quota:,} tokens used today (UTC). Nothing was sent; "
                "the quota resets at 00:00 UTC, or an admin can raise it.")
