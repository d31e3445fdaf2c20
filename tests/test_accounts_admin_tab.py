"""The admin's Users tab: each handler works for admins (the password's user and admin accounts), refuses user
accounts before doing anything, and turns bad input into a clear outcome that changes nothing."""

from __future__ import annotations

import html

import gradio as gr
import pytest

from m3ui.access import AccessPolicy
from m3ui.accounts import AccountStore
from m3ui.accounts.usage import AnswerUsage, UsageLedger
from m3ui.services import AppServices
from m3ui.ui.admin.guard import API_PREFIX
from m3ui.ui.admin.view import build_admin_app


@pytest.fixture
def tab(tmp_path):
    store = AccountStore.open(tmp_path / "data")
    store.add("alice", "alices-password", "admin")
    store.add("bob", "bobs-password")
    services = AppServices.create(tmp_path / "data", AccessPolicy.from_env("127.0.0.1", "secret", accounts=store))
    try:
        demo = build_admin_app(services)
        fns = {fn.api_name.removeprefix(API_PREFIX): fn.fn for fn in demo.fns.values() if fn.fn is not None}
        yield store, fns
    finally:
        services.close()


def call(fns, name: str, user: str, *args):
    return fns["users_" + name](gr.Request(username=user), *args)


def test_admins_manage_accounts(tab):
    store, fns = tab
    outcome, table, *_ = call(fns, "add", "admin", "carol", "carols-password", "user")
    assert "Added carol" in outcome and "carol" in table
    assert "disabled" in call(fns, "disable", "alice", "carol")[0] and not store.get("carol").enabled
    assert "enabled" in call(fns, "enable", "alice", "carol")[0] and store.get("carol").enabled
    assert "password reset" in call(fns, "password", "alice", "carol", "new-carol-password")[0]
    assert store.password_matches("carol", "new-carol-password")
    assert "role admin" in call(fns, "role", "alice", "carol", "admin")[0] and store.get("carol").is_admin
    assert "quota" in call(fns, "quota", "alice", "carol", "50,000")[0]
    assert store.get("carol").daily_token_quota == 50_000
    call(fns, "settings", "alice", True, "1000", "")
    assert store.signup_enabled and UsageLedger(store).role_quota("user") == 1000
    assert UsageLedger(store).role_quota("admin") is None


def test_usage_of_everyone_is_listed(tab):
    store, fns = tab
    UsageLedger(store).record("bob", AnswerUsage(1234, 567, 2.5))
    usage = call(fns, "list", "admin")[-1]
    assert "bob" in usage and "1,234" in usage and "567" in usage and "2.5 s" in usage


@pytest.mark.parametrize(("name", "args", "says"), [
    ("add", ("bob", "another-password", "user"), "exists already"),
    ("add", ("x y", "another-password", "user"), "user name"),
    ("add", ("dan", "short", "user"), "at least 8"),
    ("disable", ("alice",), "last enabled admin"),
    ("password", ("ghost", "a-long-password"), "no user 'ghost'"),
    ("quota", ("bob", "lots"), "whole number"),
    ("settings", (True, "12", "many"), "whole number"),
])
def test_bad_input_is_an_outcome_and_changes_nothing(tab, name, args, says):
    store, fns = tab
    before = (store.list(), store.signup_enabled)
    outcome = html.unescape(call(fns, name, "admin", *args)[0])
    assert says in outcome and "m3a-error" in outcome
    assert (store.list(), store.signup_enabled) == before


@pytest.mark.parametrize("user", ["bob", None, "ghost"])
def test_user_accounts_and_strangers_are_refused(tab, user):
    store, fns = tab
    for name, fn in fns.items():
        if name.startswith("users_"):
            with pytest.raises(gr.Error, match="admin"):
                fn(gr.Request(username=user), *[None] * 3)
    assert store.get("bob").role == "user" and not store.signup_enabled


def test_a_disabled_admin_account_is_refused_at_once(tab):
    store, fns = tab
    store.add("erin", "erins-password", "admin")
    call(fns, "list", "erin")
    store.set_enabled("erin", False)
    with pytest.raises(gr.Error, match="admin"):
        call(fns, "list", "erin")
