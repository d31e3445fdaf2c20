"""`python -m m3ui.users`: the first admin on a headless host, passwords from stdin (never argv), clear errors."""

from __future__ import annotations

import subprocess
import sys

from m3ui.accounts import AccountStore
from tests.app_process import ROOT


def users(data_dir, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "m3ui.users", "--data-dir", str(data_dir), *args], cwd=ROOT,
                          input=stdin, capture_output=True, text=True, timeout=60)


def test_add_list_disable_enable_passwd_role_quota_signup(tmp_path):
    added = users(tmp_path, "add", "Alice", "--role", "admin", stdin="alices password\n")
    assert added.returncode == 0 and "added alice (admin)" in added.stdout
    assert users(tmp_path, "add", "bob", stdin="bobs password\n").returncode == 0
    listed = users(tmp_path, "list").stdout
    assert "alice" in listed and "admin" in listed and "bob" in listed and "sign-up: off" in listed
    assert users(tmp_path, "disable", "bob").returncode == 0
    assert users(tmp_path, "passwd", "bob", stdin="new bob password\n").returncode == 0
    assert users(tmp_path, "role", "bob", "admin").returncode == 0
    assert users(tmp_path, "quota", "bob", "5000").returncode == 0
    assert users(tmp_path, "signup", "on").returncode == 0
    store = AccountStore.open(tmp_path)
    bob = store.get("bob")
    assert not bob.enabled and bob.is_admin and bob.daily_token_quota == 5000 and store.signup_enabled
    assert store.password_matches("bob", "new bob password") and store.password_matches("alice", "alices password")
    assert users(tmp_path, "enable", "bob").returncode == 0 and store.get("bob").enabled


def test_bad_input_exits_2_with_the_reason_and_changes_nothing(tmp_path):
    short = users(tmp_path, "add", "carol", stdin="short\n")
    assert short.returncode == 2 and "at least 8 characters" in short.stderr
    empty = users(tmp_path, "add", "carol", stdin="")
    assert empty.returncode == 2 and "no password on stdin" in empty.stderr
    missing = users(tmp_path, "passwd", "ghost", stdin="a long password\n")
    assert missing.returncode == 2 and "no user 'ghost'" in missing.stderr
    assert users(tmp_path, "quota", "ghost", "lots").returncode == 2
    assert AccountStore.open(tmp_path).list() == []


def test_the_password_is_not_an_argument():
    """argv shows to every user of the machine (ps): the parser has no place for a password."""
    result = subprocess.run([sys.executable, "-m", "m3ui.users", "add", "--help"], cwd=ROOT, capture_output=True,
                            text=True, timeout=60)
    assert "password" not in result.stdout.split("options:")[-1].lower()
