"""SavedPrompts: a signed-in person's saved system prompts (m3ui.conversation.saved_prompts.PromptBook), kept in
the accounts database so they follow the person to any device.

Every query names the user, and the user is whoever the caller signed in (never a name the page sends): one
person's prompts are invisible to another, whose same names are prompts of their own. A change reads the person's
book, applies the book's own rules (bounds, duplicate names, the count) and writes what changed, all in one
transaction: two tabs saving at once cannot pass the count or write over each other. Only enabled accounts keep
prompts here.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable

from m3ui.accounts.store import AccountError, AccountStore
from m3ui.conversation.saved_prompts import PromptBook, SavedPrompt

_SELECT = "SELECT name, text, is_default FROM saved_prompts WHERE user_id = ?"
SIGNED_IN_ONLY = "saved prompts are kept on the server for signed-in accounts only"


class SavedPrompts:
    def __init__(self, accounts: AccountStore) -> None:
        self.accounts = accounts
        self.db = accounts.db

    def _user_id(self, name: str) -> int:
        user = self.accounts.active(name)
        if user is None:
            raise AccountError(SIGNED_IN_ONLY)
        return user.id

    def book(self, user: str) -> PromptBook:
        return _book(self.db.query(_SELECT, (self._user_id(user),)))

    def change(self, user: str, edit: Callable[[PromptBook], PromptBook]) -> PromptBook:
        """The person's book after `edit` (a PromptBook change, e.g. `lambda book: book.without("Coder")`), which
        raises PromptError to refuse and change nothing."""
        user_id = self._user_id(user)
        with self.db.transaction() as conn:
            before = _book(conn.execute(_SELECT, (user_id,)).fetchall())
            after = edit(before)
            kept = {p.name for p in after.prompts}  # exact: a name whose case changed is deleted, then written
            for gone in before.prompts:  # (SQLite's NOCASE folds ASCII only, the book folds all of Unicode)
                if gone.name not in kept:
                    conn.execute("DELETE FROM saved_prompts WHERE user_id = ? AND name = ?", (user_id, gone.name))
            for prompt in after.prompts:
                if prompt not in before.prompts:  # new, or its text or the case of its name changed
                    conn.execute("INSERT INTO saved_prompts (user_id, name, text, updated_at) VALUES (?, ?, ?, ?) "
                                 "ON CONFLICT(user_id, name) DO UPDATE SET name = excluded.name, "
                                 "text = excluded.text, updated_at = excluded.updated_at",
                                 (user_id, prompt.name, prompt.text, time.time()))
            conn.execute("UPDATE saved_prompts SET is_default = CASE WHEN name = ? THEN 1 ELSE 0 END "
                         "WHERE user_id = ?", (after.default, user_id))
            return after


def _book(rows: list[sqlite3.Row]) -> PromptBook:
    prompts = sorted((SavedPrompt(row["name"], row["text"]) for row in rows), key=lambda p: p.name.casefold())
    return PromptBook(tuple(prompts), next((row["name"] for row in rows if row["is_default"]), None))
