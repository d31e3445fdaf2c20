"""m3ui's login sessions on their own (a real accounts database, a clock the test moves): the token is kept only as
a hash; a disabled user's sessions all end, an expired one ends alone, a changed password ends the sessions signed
in before it but the one that changed it; a chat session is no admin session; the rows stay bounded."""

from __future__ import annotations

import sqlite3

import pytest

from m3ui.accounts import sessions as sessions_module
from m3ui.accounts.sessions import SessionStore
from m3ui.accounts.sqlite_db import DB_FILE_NAME, SqliteDb
from m3ui.web.logins import Logins, end_sessions


class Accounts:
    """The policy's check: who may go on, and the stamp of their password."""

    def __init__(self) -> None:
        self.stamps = {"alice": "a1", "bob": "b1"}
        self.admins = {"alice"}

    def check(self, user: str, admin_app: bool) -> str | None:
        user = user.lower()  # as the accounts match names
        return self.stamps.get(user) if not admin_app or user in self.admins else None


@pytest.fixture()
def world(tmp_path):
    now = [1000.0]
    store = SessionStore(SqliteDb(tmp_path / DB_FILE_NAME), clock=lambda: now[0])
    accounts = Accounts()
    chat = Logins("chat", "", store, accounts.check, max_age_s=100)
    admin = Logins("admin", "/admin", store, accounts.check, max_age_s=100)
    return store, accounts, chat, admin, now


def test_the_token_is_stored_only_as_a_hash(world, tmp_path):
    store, _, chat, _, _ = world
    token = chat.start("Alice")
    assert chat.user_of(token) == "alice", "the account's name, whatever the spelling typed"
    dump = "\n".join(sqlite3.connect(tmp_path / DB_FILE_NAME).iterdump())
    assert token not in dump and "alice" in dump


def test_a_disabled_user_loses_every_session_and_others_keep_theirs(world):
    _, accounts, chat, _, _ = world
    phone, laptop, other = chat.start("bob"), chat.start("BOB"), chat.start("alice")
    del accounts.stamps["bob"]
    assert chat.user_of(phone) is None
    accounts.stamps["bob"] = "b1"  # enabled again: the sessions stay ended, a new login is needed
    assert chat.user_of(laptop) is None and chat.user_of(other) == "alice"


def test_an_expired_session_ends_alone(world):
    _, _, chat, _, now = world
    old = chat.start("bob")
    now[0] += 60
    young = chat.start("bob")
    now[0] += 50
    assert chat.user_of(old) is None and chat.user_of(young) == "bob"
    now[0] -= 50
    assert chat.user_of(old) is None, "its row is gone, not only refused"


def test_a_changed_password_ends_the_other_sessions_but_the_asking_one(world):
    _, accounts, chat, admin, _ = world
    asking, stolen, in_admin = chat.start("alice"), chat.start("alice"), admin.start("alice")
    accounts.stamps["alice"] = "a2"
    assert end_sessions((chat, admin), "alice", {chat.cookie: asking}) == 2
    assert chat.user_of(asking) == "alice", "stamped with the new password"
    assert chat.user_of(stolen) is None and admin.user_of(in_admin) is None
    accounts.stamps["alice"] = "a3"  # changed elsewhere (another process): ended at its next request
    assert chat.user_of(asking) is None


def test_a_kept_cookie_of_another_user_is_not_restamped(world):
    _, accounts, chat, _, _ = world
    bobs = chat.start("bob")
    accounts.stamps["bob"] = "b2"
    end_sessions((chat,), "alice", {chat.cookie: bobs})
    assert chat.user_of(bobs) is None, "bob's password changed: alice's change keeps no session of bob's"


def test_a_chat_session_is_no_admin_session_and_a_demoted_admin_keeps_chat(world):
    _, accounts, chat, admin, _ = world
    chatting, administering = chat.start("alice"), admin.start("alice")
    assert admin.user_of(chatting) is None and chat.user_of(administering) is None
    assert admin.start("bob") is None, "a user account gets no admin session"
    accounts.admins.clear()
    assert admin.user_of(administering) is None and chat.user_of(chatting) == "alice"


def test_sessions_per_user_are_bounded_oldest_first(world, monkeypatch):
    store, _, chat, _, now = world
    monkeypatch.setattr(sessions_module, "MAX_PER_USER", 3)
    tokens = []
    for _ in range(5):
        now[0] += 1
        tokens.append(chat.start("bob"))
    assert [chat.user_of(t) for t in tokens] == [None, None, "bob", "bob", "bob"]
    assert store.db.query("SELECT COUNT(*) FROM sessions")[0][0] == 3


def test_the_cookie_name_is_kept_with_the_database(world, tmp_path):
    _, _, chat, admin, _ = world
    again = Logins("chat", "", SessionStore(SqliteDb(tmp_path / DB_FILE_NAME)), lambda user, admin_app: "", 100)
    assert again.cookie == chat.cookie != admin.cookie
    other = SessionStore(SqliteDb(tmp_path / "other" / DB_FILE_NAME))
    assert Logins("chat", "", other, lambda user, admin_app: "", 100).cookie != chat.cookie
