"""Sign-up at /signup on the real app: off by default (403), on once an admin turns it on; a new account signs in
to the chat at once; bad input is refused with the reason and creates nothing; a client may create only a few
accounts an hour; a page on another site cannot post the form."""

from __future__ import annotations

import httpx
import pytest

from m3ui.accounts import AccountStore
from m3ui.web.signup import SIGNUPS_PER_HOUR
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
        for name, password, again, says in [("x y", "a-good-password", None, "user name"),
                                            ("zoe", "short", None, "at least 8"),
                                            ("zoe", "a-good-password", "another-one", "differ"),
                                            ("alice", "a-good-password", None, "exists already")]:
            answer = sign_up(c, name, password, again)
            assert answer.status_code == 400 and says in answer.text.replace("&#x27;", "'"), answer.text
        assert [u.name for u in store.list()] == ["alice"]
        created = sign_up(c, "zoe")
        assert created.status_code == 200 and "Account zoe created" in created.text
        assert store.get("zoe").role == "user"
        assert c.post("/login", data={"username": "zoe", "password": "a-good-password"}).status_code == 200
        foreign = sign_up(c, "mallory", origin="http://evil.example")
        assert foreign.status_code == 403 and store.get("mallory") is None
        answers = [sign_up(c, f"user{n}").status_code for n in range(SIGNUPS_PER_HOUR)]
        assert answers == [200] * (SIGNUPS_PER_HOUR - 1) + [429], "zoe counted as the first of the hour"
        store.set_signup(False)
        assert sign_up(c, "late").status_code == 403
    assert "audit: account 'zoe' created by sign-up from 127.0.0.1" in app.log()
    assert "a-good-password" not in app.log()
    store.close()
