"""Isolation: the Account tab's handlers take the person from the login only. Every handler of the main app that
mentions an account is tried with another user's name as input: none shows or changes another account."""

from __future__ import annotations

import gradio as gr
import pytest

from m3ui.access import AccessPolicy
from m3ui.accounts import AccountStore
from m3ui.accounts.usage import AnswerUsage, UsageLedger
from m3ui.services import AppServices
from m3ui.ui.account_view import AccountTab
from m3ui.ui.app_view import build_main_app


@pytest.fixture
def main(tmp_path):
    store = AccountStore.open(tmp_path / "data")
    store.add("bob", "bobs-password")
    store.add("carol", "carols-password")
    UsageLedger(store).record("bob", AnswerUsage(1111, 2222, 1.0))
    UsageLedger(store).record("carol", AnswerUsage(5555, 7777, 2.0))
    services = AppServices.create(tmp_path / "data", AccessPolicy.from_env("0.0.0.0", None, accounts=store))
    try:
        demo = build_main_app(services)
        fns = [fn for fn in demo.fns.values() if isinstance(getattr(fn.fn, "__self__", None), AccountTab)]
        assert len(fns) == 2
        yield store, fns
    finally:
        services.close()


def test_each_sees_only_their_own_usage(main):
    _, fns = main
    (me,) = [fn.fn for fn in fns if fn.fn.__name__ == "me"]
    bob = " ".join(me(gr.Request(username="bob")))
    assert "1,111" in bob and "2,222" in bob and "5,555" not in bob and "carol" not in bob
    carol = " ".join(me(gr.Request(username="carol")))
    assert "5,555" in carol and "1,111" not in carol and "bob" not in carol


def test_a_password_change_needs_the_own_current_password(main):
    store, fns = main
    (change,) = [fn.fn for fn in fns if fn.fn.__name__ == "change_password"]
    with pytest.raises(gr.Error, match="current password"):  # carol's password does not change bob's
        change("carols-password", "taken-over-pw", "taken-over-pw", gr.Request(username="bob"))
    assert store.password_matches("carol", "carols-password") and store.password_matches("bob", "bobs-password")
    change("bobs-password", "bobs-new-password", "bobs-new-password", gr.Request(username="bob"))
    assert store.password_matches("bob", "bobs-new-password") and store.password_matches("carol", "carols-password")
    with pytest.raises(gr.Error, match="Only an account"):
        change("x", "y", "y", gr.Request(username=None))


def test_no_handler_takes_an_account_name_as_input(main):
    """The handlers' only inputs are passwords: no client value can name another account."""
    _, fns = main
    for fn in fns:
        labels = [getattr(block, "label", "") or "" for block in fn.inputs]
        assert all("password" in label.lower() for label in labels), labels
