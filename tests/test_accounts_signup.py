"""Sign-up at /signup on the real app: off by default (403), on once an admin turns it on; a new account signs in
to the chat at once; bad input is refused and creates nothing, with one message whatever the reason (issue 27 #13:
a taken name is not told apart); a client may try only a few names an hour; a page on another site cannot post
the form."""

from __future__ import annotations

import html
import re

import httpx
import pytest

from m3ui.accounts import AccountStore
from m3ui.web.signup import REFUSED, SIGNUPS_PER_HOUR
from tests.account_calls import SIGNED_IN, from_address
from tests.app_process import running_app


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    folder = tmp_path_factory.mktemp("signup")
    AccountStore.open(folder / "data").add("alice", "alices-password", "admin")
    with running_app(folder, data_dir=folder / "data") as running:
        yield running


def sign_up(c: httpx.Client, name: str, password: str = "a-good-password", again: str | None = None,
            **headers: str) -> httpx.Response:
    return c.post("/signup", data={"username": name, "password": password,
                                   "again": password if again is None else again}, headers=headers)


def test_sign_up_only_while_an_admin_allows_it(app):
    store = AccountStore.open(app.data_dir)
    with httpx.Client(base_url=app.url, trust_env=False, timeout=30) as c:
        refused = sign_up(c, "zoe")
        assert refused.status_code == 403 and "Sign-up is off" in refused.text and store.get("zoe") is None
        store.set_signup(True)
        assert c.get("/signup").status_code == 200
        refusals = [sign_up(c, name, password, again) for name, password, again in [
            ("x y", "a-good-password", None), ("admin", "a-good-password", None), ("zoe", "short", None),
            ("zoe", "a-good-password", "another-one")]]
        assert [(r.status_code, _note(r)) for r in refusals] == [(400, REFUSED)] * len(refusals)
        assert [u.name for u in store.list()] == ["alice"]
        created = sign_up(c, "zoe")
        assert created.status_code == 200 and "Account zoe created" in created.text
        assert store.get("zoe").role == "user"
        assert c.post("/login", data={"username": "zoe", "password": "a-good-password"}).status_code == SIGNED_IN
        foreign = sign_up(c, "mallory", origin="http://evil.example")
        assert foreign.status_code == 403 and store.get("mallory") is None
        answers = [sign_up(c, f"user{n}").status_code for n in range(SIGNUPS_PER_HOUR)]
        assert answers == [200] * (SIGNUPS_PER_HOUR - 1) + [429], "zoe counted as the first of the hour"
        store.set_signup(False)
        assert sign_up(c, "late").status_code == 403
    assert "audit: account 'zoe' created by sign-up from 127.0.0.1" in app.log()
    assert "a-good-password" not in app.log()
    store.close()


def test_a_taken_name_is_refused_like_any_other_and_each_try_counts(app):
    """Without a word saying the name exists, and with each try of a taken name counted in the address's hourly
    sign-ups, a script can no longer list the accounts."""
    store = AccountStore.open(app.data_dir)
    store.set_signup(True)
    with from_address(app, "127.0.0.7") as c:
        taken = [sign_up(c, name) for name in ("alice", "ALICE")]
        assert [(r.status_code, _note(r)) for r in taken] == [(400, REFUSED)] * 2
        assert "exists" not in taken[0].text and "alice" not in _note(taken[0])
        answers = [sign_up(c, "alice").status_code for _ in range(SIGNUPS_PER_HOUR)]
        assert answers == [400] * (SIGNUPS_PER_HOUR - 2) + [429] * 2, answers
    store.set_signup(False)
    store.close()
    assert "audit: sign-up refused for 'alice' from 127.0.0.7: user 'alice' exists already" in app.log()


def _note(answer: httpx.Response) -> str:
    """The page's message (role=status), unescaped."""
    found = re.search(r'role="status">(.*?)</p>', answer.text)
    return html.unescape(found.group(1)) if found else ""
