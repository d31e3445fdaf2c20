"""The admin's API keys panel (Users tab): every person's keys are listed and any can be revoked; a user account
is refused before anything changes."""

from __future__ import annotations

import gradio as gr
import pytest

from m3ui.accounts.keys import ApiKeyStore
from tests.test_accounts_admin_tab import tab

FIXTURES = (tab,)  # test_accounts_admin_tab's: the admin app's handlers over two accounts


def test_admins_see_and_revoke_every_key(tab):
    store, fns = tab
    keys = ApiKeyStore(store)
    bobs, bob_key = keys.create("bob", "ci")
    alices, _ = keys.create("alice", "laptop")
    _, table = fns["keys_list"](gr.Request(username="alice"))
    assert bobs.id in table and alices.id in table and "ci" in table and bob_key not in table
    outcome, table = fns["keys_revoke"](gr.Request(username="alice"), bobs.id)
    assert f"API key {bobs.id} of bob revoked" in outcome and keys.check(bob_key) is None
    outcome, _ = fns["keys_revoke"](gr.Request(username="alice"), "nope")
    assert "Not revoked: no API key &#x27;nope&#x27;" in outcome


def test_a_user_account_cannot_list_or_revoke_keys(tab):
    store, fns = tab
    keys = ApiKeyStore(store)
    alices, alice_key = keys.create("alice")
    for name, args in (("keys_list", ()), ("keys_revoke", (alices.id,))):
        with pytest.raises(gr.Error):
            fns[name](gr.Request(username="bob"), *args)
    assert keys.check(alice_key) is not None
