"""UsageLedger: tokens, requests and engine time per user per day (UTC), and the daily token quota.

A quota is the user's own `daily_token_quota` when set, else its role's (setting `quota.<role>`); none means
no limit. It counts prompt + completion tokens of the day. Every engine request, from the browser or an API key,
first reserves its prompt (counted high: `prompt_bound`) plus its `max_tokens`, capped at what is left of the
quota (the request is sent with that cap), and settles the real figure when it ends: concurrent requests cannot
overshoot the quota together.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from m3ui.accounts.reservations import held_tokens
from m3ui.accounts.store import AccountError, AccountStore, Role, User, check_role

ROLE_QUOTA_KEY = "quota.{role}"
# Tokens a chat template may add beyond the messages' own text (role markers, the tool-use instructions)
TEMPLATE_MARGIN_TOKENS = 256
# A quota taken up by requests still running frees up as they settle: try again this soon
HELD_RETRY_S = 5


def prompt_bound(*parts: object) -> int:
    """An upper bound on the prompt tokens of a request made of `parts` (messages, tools, a system text...): a
    byte-level tokenizer makes at most one token per byte of the JSON text, and the template adds a margin."""
    text = json.dumps(parts, ensure_ascii=False, separators=(",", ":"), default=str)
    return len(text.encode("utf-8", "surrogatepass")) + TEMPLATE_MARGIN_TOKENS


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


class QuotaRefused(Exception):
    """Nothing is left of the person's daily quota for this request; `retry_after_s`: when to try again."""

    def __init__(self, message: str, retry_after_s: int) -> None:
        super().__init__(message)
        self.message, self.retry_after_s = message, retry_after_s


class Reservation:
    """The tokens one engine request may use. `max_tokens` is the completion cap to send (None: no quota, the
    request's own); `settle` records the real figure once and frees the hold (later calls do nothing)."""

    def __init__(self, ledger: UsageLedger | None, name: str | None, user_id: int | None, hold: int | None,
                 prompt_tokens: int, max_tokens: int | None) -> None:
        self._ledger, self._name, self._user_id, self._hold = ledger, name, user_id, hold
        self.prompt_tokens, self.max_tokens = prompt_tokens, max_tokens
        self._lock = threading.Lock()
        self.settled = False

    def settle(self, usage: AnswerUsage) -> None:
        with self._lock:
            if self.settled:
                return
            self.settled = True
        if self._ledger is None:
            return
        try:
            if self._name is not None:
                self._ledger.record(self._name, usage)
        finally:
            if self._hold is not None and self._user_id is not None:
                self._ledger.held.release(self._user_id, self._hold)


def unmetered(max_tokens: int | None) -> Reservation:
    """The reservation of a request that has no account behind it (the admin password's): nothing is counted."""
    return Reservation(None, None, None, None, 0, max_tokens)


def seconds_to_utc_midnight(at: float | None = None) -> int:
    now = datetime.fromtimestamp(time.time() if at is None else at, UTC)
    midnight = (now + timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
    return max(1, int((midnight - now).total_seconds()) + 1)


class UsageLedger:
    def __init__(self, accounts: AccountStore) -> None:
        self.accounts = accounts
        self.db = accounts.db
        self.held = held_tokens(accounts.db)

    def reserve(self, name: str | None, prompt_tokens: int, max_tokens: int | None) -> Reservation:
        """Hold `prompt_tokens` (a bound: see prompt_bound) plus the completion this request may make: its
        `max_tokens` (None: all that is left), capped at what is left of the person's quota. QuotaRefused when
        not even one completion token is left; a name without an account is not counted."""
        user = self.accounts.get(name) if name else None
        if user is None:
            return unmetered(max_tokens)
        quota = self.quota_of(user)
        with self.held.lock:
            if quota is None:
                return Reservation(self, user.name, None, None, prompt_tokens, max_tokens)
            used, held = self.tokens_today(user), self.held.total(user.id)
            left = quota - used - held
            if left <= prompt_tokens:
                raise QuotaRefused(self._refusal_text(used, held, quota, prompt_tokens),
                                   HELD_RETRY_S if held and used + prompt_tokens < quota else seconds_to_utc_midnight())
            cap = left - prompt_tokens
            completion = cap if max_tokens is None else max(1, min(max_tokens, cap))
            hold = self.held.add(user.id, prompt_tokens + completion)
        return Reservation(self, user.name, user.id, hold, prompt_tokens, completion)

    @staticmethod
    def _refusal_text(used: int, held: int, quota: int, prompt_tokens: int) -> str:
        if used >= quota:
            return (f"Daily token quota reached: {used:,} of {quota:,} tokens used today (UTC). Nothing was sent; "
                    "the quota resets at 00:00 UTC, or an admin can raise it.")
        return (f"Daily token quota: {used:,} of {quota:,} tokens used today (UTC) and {held:,} held by requests "
                f"still running; this one needs up to {prompt_tokens:,} for its prompt. Nothing was sent.")

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
