"""Accounts in SQLite: users, roles, passwords (scrypt), enabled flag, schema versions, file mode, usage, quotas."""

from __future__ import annotations

import sqlite3
import stat
import threading

import pytest

from m3ui.accounts import AccountError, AccountStore, hash_password, verify_password
from m3ui.accounts.migrations import MIGRATIONS
from m3ui.accounts.sqlite_db import DB_FILE_NAME
from m3ui.accounts.usage import AnswerUsage, UsageLedger, utc_day

PASSWORD = "correct horse"


@pytest.fixture
def store(tmp_path):
    accounts = AccountStore.open(tmp_path)
    yield accounts
    accounts.close()


def test_password_hash_is_scrypt_salted_and_checks(store):
    first, second = hash_password(PASSWORD), hash_password(PASSWORD)
    assert first.startswith("scrypt$32768$8$1$") and first != second  # salted
    assert verify_password(PASSWORD, first) and not verify_password(PASSWORD + "x", first)
    assert not verify_password(PASSWORD, "garbage") and not verify_password("x" * 5000, first)


def test_add_authenticate_and_last_login(store):
    store.add("Alice", PASSWORD, "admin")
    alice = store.get("alice")
    assert alice.name == "alice" and alice.is_admin and alice.enabled and alice.last_login_at is None
    assert store.authenticate("ALICE", PASSWORD).id == alice.id
    assert store.get("alice").last_login_at is not None
    assert store.authenticate("alice", "wrong password") is None
    assert store.authenticate("nobody", PASSWORD) is None
    stored = store.db.query("SELECT password_hash FROM users")[0][0]
    assert PASSWORD not in stored


@pytest.mark.parametrize(("name", "password", "role", "says"), [
    ("", PASSWORD, "user", "user name"), ("a b", PASSWORD, "user", "user name"),
    ("admin", PASSWORD, "user", "reserved"), ("bob", "short", "user", "at least 8"),
    ("bob", PASSWORD, "root", "role"),
])
def test_bad_input_is_refused_with_the_reason(store, name, password, role, says):
    with pytest.raises(AccountError, match=says):
        store.add(name, password, role)
    assert store.list() == []


def test_duplicate_names_are_refused_case_insensitively(store):
    store.add("bob", PASSWORD)
    with pytest.raises(AccountError, match="exists already"):
        store.add("BOB", PASSWORD)


def test_disabled_user_cannot_sign_in_and_is_not_active(store):
    store.add("bob", PASSWORD)
    store.set_enabled("bob", False)
    assert store.authenticate("bob", PASSWORD) is None and store.active("bob") is None
    store.set_enabled("bob", True)
    assert store.active("bob") is not None


def test_password_and_role_changes(store):
    store.add("bob", PASSWORD)
    store.set_password("bob", "another password")
    assert store.authenticate("bob", PASSWORD) is None and store.authenticate("bob", "another password")
    assert store.set_role("bob", "admin").is_admin


def test_last_enabled_admin_is_kept(store):
    store.add("alice", PASSWORD, "admin")
    with pytest.raises(AccountError, match="last enabled admin"):
        store.set_enabled("alice", False)
    with pytest.raises(AccountError, match="last enabled admin"):
        store.set_role("alice", "user")
    store.add("carol", PASSWORD, "admin")
    store.set_enabled("alice", False)
    assert not store.get("alice").enabled


def test_changes_to_a_missing_user_say_so(store):
    with pytest.raises(AccountError, match="no user 'ghost'"):
        store.set_enabled("ghost", False)


def test_signup_is_off_until_turned_on(store):
    assert not store.signup_enabled
    store.set_signup(True)
    assert AccountStore.open(store.db.path.parent).signup_enabled


def test_file_is_private_wal_and_versioned(tmp_path, store):
    store.add("bob", PASSWORD)
    path = tmp_path / DB_FILE_NAME
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert store.db.query("PRAGMA journal_mode")[0][0] == "wal"
    assert store.db.schema_version() == len(MIGRATIONS)
    versions = [row[0] for row in store.db.query("SELECT version FROM schema_migrations ORDER BY version")]
    assert versions == list(range(1, len(MIGRATIONS) + 1))
    again = AccountStore.open(tmp_path)  # reopening migrates nothing twice and keeps the data
    assert again.get("bob") is not None and again.db.schema_version() == len(MIGRATIONS)


def test_a_newer_schema_is_refused(tmp_path, store):
    store.db.query("INSERT INTO schema_migrations VALUES (?, 0)", (len(MIGRATIONS) + 1,))
    with pytest.raises(RuntimeError, match="newer than this m3ui knows"):
        AccountStore.open(tmp_path)


def test_two_processes_worth_of_writers_never_see_locked(tmp_path, store):
    """A second connection (as `python -m m3ui.users` would hold) writes while this one does."""
    store.add("bob", PASSWORD)
    other = AccountStore.open(tmp_path)
    ledger_a, ledger_b = UsageLedger(store), UsageLedger(other)
    errors: list[BaseException] = []

    def write(ledger):
        try:
            for _ in range(200):
                ledger.record("bob", AnswerUsage(1, 2, 0.01))
        except sqlite3.Error as exc:  # pragma: no cover - the failure this test looks for
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(ledger,)) for ledger in (ledger_a, ledger_b, ledger_a)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    (day,) = ledger_a.days("bob")
    assert (day.requests, day.prompt_tokens, day.completion_tokens) == (600, 600, 1200)


def test_usage_per_user_per_day_and_quota(store):
    store.add("bob", PASSWORD)
    store.add("carol", PASSWORD)
    ledger = UsageLedger(store)
    ledger.record("bob", AnswerUsage(100, 50, 1.5), at=0)  # 1970-01-01
    ledger.record("bob", AnswerUsage(10, 5, 0.5))
    ledger.record("bob", AnswerUsage(10, 5, 0.5))
    ledger.record("carol", AnswerUsage(1, 1, 0.1))
    ledger.record("admin", AnswerUsage(1, 1, 0.1))  # the admin password's user has no account: not counted
    today = [d for d in ledger.days("bob") if d.day == utc_day()][0]
    assert (today.prompt_tokens, today.completion_tokens, today.requests) == (20, 10, 2)
    assert today.engine_seconds == pytest.approx(1.0)
    assert {d.user for d in ledger.days()} == {"bob", "carol"} and len(ledger.days()) == 3
    assert all(d.user == "bob" for d in ledger.days("bob"))
    assert ledger.refusal("bob") is None
    ledger.set_role_quota("user", 30)
    assert "Daily token quota reached: 30 of 30" in ledger.refusal("bob")
    assert ledger.refusal("carol") is None  # 2 of 30
    store.set_quota("bob", 1000)  # a user's own quota comes before the role's
    assert ledger.refusal("bob") is None
    with pytest.raises(AccountError):
        ledger.set_role_quota("user", -1)
