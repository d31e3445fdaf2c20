"""ServerChats: a signed-in person's chats kept in the accounts database, so they follow them to any device.

Every query names the user: a chat id of another user is simply not found (no error tells it exists). Each save
says which revision it was made from; a save from an older revision (another tab or device saved meanwhile) is
never dropped and never overwrites: it is kept as a new chat, a branch, beside the one it diverged from.
Chats are stored as the browser stores them (m3ui.conversation.library.chat_record), so import and export share
one format. Bounded: a chat's record and a user's number of chats have limits.

Only enabled accounts keep chats here, with one exception: the answer an account was given while it was enabled
is saved when it ends, even if the account was disabled while it streamed (`answer_ending`).
"""

from __future__ import annotations

import builtins
import json
import secrets
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace

from m3ui.accounts.store import AccountError, AccountStore
from m3ui.conversation.library import CHAT_ID, SavedChat, chat_from_record, chat_record

MAX_RECORD_CHARS = 4_000_000
MAX_CHATS_PER_USER = 5_000
BRANCH_SUFFIX = " (other device)"
# The person whose answer is being saved as it ends, in this thread: they may have been disabled meanwhile.
_ANSWER_ENDING: ContextVar[str | None] = ContextVar("answer_ending", default=None)


@dataclass(frozen=True)
class StoredChat:
    chat: SavedChat
    revision: int
    branched_from: str | None = None  # set when the save conflicted and was kept as this new chat


@dataclass(frozen=True)
class ChatListing:
    id: str
    title: str
    revision: int
    updated_at: float


class ServerChats:
    def __init__(self, accounts: AccountStore) -> None:
        self.accounts = accounts
        self.db = accounts.db

    @staticmethod
    @contextmanager
    def answer_ending(user: str) -> Iterator[None]:
        """Within: `user`'s chats are written even if the account was disabled while its answer streamed (an
        answer already streaming is not cut off, and it is saved with its question). Never around a yield."""
        token = _ANSWER_ENDING.set(user)
        try:
            yield
        finally:
            _ANSWER_ENDING.reset(token)

    def _user_id(self, name: str) -> int:
        user = self.accounts.active(name)
        if user is None and _ANSWER_ENDING.get() == name:
            user = self.accounts.get(name)
        if user is None:
            raise AccountError("chats are kept on the server for signed-in accounts only")
        return user.id

    def list(self, user: str) -> list[ChatListing]:
        rows = self.db.query("SELECT id, title, revision, updated_at FROM chats WHERE user_id = ? "
                             "ORDER BY updated_at DESC", (self._user_id(user),))
        return [ChatListing(*row) for row in rows]

    def load(self, user: str, chat_id: str) -> StoredChat | None:
        """The user's chat, or None (also for another user's id)."""
        rows = self.db.query("SELECT record, revision FROM chats WHERE user_id = ? AND id = ?",
                             (self._user_id(user), chat_id))
        if not rows:
            return None
        chat = chat_from_record(json.loads(rows[0]["record"]))
        return StoredChat(chat, rows[0]["revision"]) if chat is not None else None

    def version(self, user: str, chat_id: str) -> tuple[int, str] | None:
        """The stored chat's revision and content hash (chat_record's), without reading the chat; None: no such."""
        rows = self.db.query("SELECT revision, json_extract(record, '$.hash') FROM chats WHERE user_id = ? AND id = ?",
                             (self._user_id(user), chat_id))
        return (rows[0][0], str(rows[0][1])) if rows else None

    def save(self, user: str, chat: SavedChat, base_revision: int) -> StoredChat:
        """Store `chat` as made from `base_revision` (0 for a chat new to the server). When the stored chat has
        moved on meanwhile, this save is kept as a new chat (a branch) instead: StoredChat.branched_from says so."""
        if not CHAT_ID.fullmatch(chat.id):
            raise AccountError(f"unusable chat id {chat.id[:80]!r}")
        user_id = self._user_id(user)
        record = json.dumps(chat_record(chat), ensure_ascii=False)
        if len(record) > MAX_RECORD_CHARS:
            raise AccountError(f"a chat may hold at most {MAX_RECORD_CHARS:,} characters: this one was not saved")
        with self.db.transaction() as conn:
            row = conn.execute("SELECT revision FROM chats WHERE user_id = ? AND id = ?",
                               (user_id, chat.id)).fetchone()
            current = row[0] if row else 0
            if current == base_revision:
                if row is None:
                    self._check_room(conn, user_id)
                conn.execute("INSERT INTO chats VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(user_id, id) DO UPDATE SET "
                             "revision = excluded.revision, title = excluded.title, record = excluded.record, "
                             "updated_at = excluded.updated_at",
                             (user_id, chat.id, current + 1, chat.title, record, time.time()))
                return StoredChat(chat, current + 1)
            self._check_room(conn, user_id)
            branch = replace(chat, id=f"{chat.id[:50]}-{secrets.token_hex(4)}",
                             title=(chat.title + BRANCH_SUFFIX)[:80])
            conn.execute("INSERT INTO chats VALUES (?, ?, 1, ?, ?, ?)",
                         (user_id, branch.id, branch.title, json.dumps(chat_record(branch), ensure_ascii=False),
                          time.time()))
            return StoredChat(branch, 1, branched_from=chat.id)

    def delete(self, user: str, chat_id: str, revision: int | None = None) -> bool:
        """Delete the chat (only while it is still at `revision`, when given: a newer save is kept)."""
        args: tuple[object, ...]
        sql, args = "DELETE FROM chats WHERE user_id = ? AND id = ?", (self._user_id(user), chat_id)
        if revision is not None:
            sql, args = sql + " AND revision = ?", (*args, revision)
        with self.db.transaction() as conn:
            return conn.execute(sql, args).rowcount > 0

    def delete_all(self, user: str) -> int:
        """Delete-my-data: every chat of the user; how many there were."""
        with self.db.transaction() as conn:
            return conn.execute("DELETE FROM chats WHERE user_id = ?", (self._user_id(user),)).rowcount

    def export(self, user: str) -> builtins.list[dict[str, object]]:  # list: the method above
        """Every chat of the user, as the browser stores them (json.dumps-able)."""
        rows = self.db.query("SELECT record FROM chats WHERE user_id = ? ORDER BY updated_at", (self._user_id(user),))
        return [json.loads(row["record"]) for row in rows]

    @staticmethod
    def _check_room(conn: sqlite3.Connection, user_id: int) -> None:
        count = conn.execute("SELECT COUNT(*) FROM chats WHERE user_id = ?", (user_id,)).fetchone()[0]
        if count >= MAX_CHATS_PER_USER:
            raise AccountError(f"at most {MAX_CHATS_PER_USER:,} chats are kept per person: delete some first")
