"""The admin's API keys panel (Users tab): every person's keys are listed and any can be revoked; a user account
is refused before anything changes."""

from __future__ import annotations

import gradio as gr
import pytest

from m3ui.access import AccessPolicy
from m3ui.accounts import AccountStore
from m3ui.accounts.keys import ApiKeyStore
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
        yield ApiKeyStore(store), fns
    finally:
        services.close()


def test_admins_see_and_revoke_every_key(tab):
    keys, fns = tab
    bobs, bob_key = keys.create("bob", "ci")
    alices, _ = keys.create("alice", "laptop")
    _, table = fns["keys_list"](gr.Request(username="alice"))
    assert bobs.id in table and alices.id in table and "ci" in table and bob_key not in table
    outcome, table = fns["keys_revoke"](gr.Request(username="alice"), bobs.id)
    assert f"API key {bobs.id} of bob revoked" in outcome and keys.check(bob_key) is None
    outcome, _ = fns["keys_revoke"](gr.Request(username="alice"), "nope")
    assert "Not revoked: no API key &#x27;nope&#x27;" in outcome


def test_a_user_account_cannot_list_or_revoke_keys(tab):
    keys, fns = tab
    alices, alice_key = keys.create("alice")
    for name, args in (("keys_list", ()), ("keys_revoke", (alices.id,))):
        with pytest.raises(gr.Error):
            fns[name](gr.Request(username="bob"), *args)
    assert keys.check(alice_key) is not None
