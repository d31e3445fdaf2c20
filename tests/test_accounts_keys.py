"""API keys: created by the CLI (the key alone on the last stdout line), stored hashed, listed, revoked, expired;
a key works only while it is active and its person enabled, and another person cannot revoke it."""

from __future__ import annotations

import time

import pytest

from m3ui.accounts import AccountError, AccountStore
from m3ui.accounts.keys import ApiKeyStore, key_hash
from tests.test_accounts_cli import users


def test_the_cli_adds_lists_and_revokes_keys(tmp_path):
    assert users(tmp_path, "add", "bob", stdin="bobs password\n").returncode == 0
    added = users(tmp_path, "key", "add", "Bob", "--label", "laptop", "--expires-days", "30")
    assert added.returncode == 0, added.stderr
    key = added.stdout.strip().splitlines()[-1]
    assert key.startswith("m3ui_") and " " not in key
    store = AccountStore.open(tmp_path)
    keys = ApiKeyStore(store)
    found = keys.check(key)
    assert found is not None and found.user == "bob" and found.label == "laptop" and found.last_used_at
    assert 29 * 86400 < found.expires_at - time.time() <= 30 * 86400
    rows = store.db.query("SELECT key_hash FROM api_keys")
    assert [r[0] for r in rows] == [key_hash(key)]
    listed = users(tmp_path, "key", "list", "bob").stdout
    assert found.id in listed and "laptop" in listed and "active" in listed and key not in listed
    assert users(tmp_path, "key", "revoke", found.id).returncode == 0
    assert keys.check(key) is None and "revoked" in users(tmp_path, "key", "list").stdout
    store.close()
    # (read only once closed: reading the file in the process that has it open drops SQLite's POSIX locks)
    assert key.encode() not in b"".join(p.read_bytes() for p in tmp_path.glob("accounts.sqlite3*"))


def test_bad_key_input_exits_2_with_the_reason(tmp_path):
    assert users(tmp_path, "add", "bob", stdin="bobs password\n").returncode == 0
    for args, reason in [(("key", "add", "ghost"), "no user 'ghost'"),
                         (("key", "add", "bob", "--expires-days", "0"), "--expires-days: give 1 to"),
                         (("key", "add", "bob", "--label", "x" * 65), "label is at most 64"),
                         (("key", "revoke", "nope"), "no API key 'nope'")]:
        result = users(tmp_path, *args)
        assert result.returncode == 2 and reason in result.stderr, (args, result.stderr)


@pytest.fixture
def keys(tmp_path):
    store = AccountStore.open(tmp_path)
    store.add("bob", "bobs-password")
    store.add("carol", "carols-password")
    yield ApiKeyStore(store)
    store.close()


def test_only_an_active_key_of_an_enabled_person_passes(keys):
    _, key = keys.create("bob")
    assert keys.check(key) is not None
    for wrong in ("", key[:-1] + ("A" if key[-1] != "A" else "B"), key + "x", "Bearer " + key,
                  "m3ui_000000000000_" + key[-43:]):
        assert keys.check(wrong) is None, wrong
    keys.accounts.set_enabled("bob", False)
    assert keys.check(key) is None, "a disabled person's keys stop working"
    keys.accounts.set_enabled("bob", True)
    expired, expired_key = keys.create("bob", expires_days=1)
    with keys.db.transaction() as conn:
        conn.execute("UPDATE api_keys SET expires_at = ? WHERE id = ?", (time.time() - 1, expired.id))
    assert keys.check(expired_key) is None and keys.get(expired.id).state() == "expired"


def test_a_person_revokes_only_their_own_keys(keys):
    bobs, _ = keys.create("bob", "ci")
    with pytest.raises(AccountError, match="no API key"):
        keys.revoke(bobs.id, by="carol")
    assert keys.get(bobs.id).state() == "active"
    assert keys.revoke(bobs.id, by="bob").state() == "revoked"
    assert [k.id for k in keys.list("bob")] == [bobs.id] and keys.list("carol") == []
