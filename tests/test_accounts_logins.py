"""Logins through the accounts on the real app over HTTP: both apps, the admin password beside them, --chat-user
seeding, sign-out, session expiry, and every session of a disabled (or demoted) account ended at once."""

from __future__ import annotations

import time

import httpx
import pytest

from m3ui.accounts import AccountStore
from tests.account_calls import SIGNED_IN
from tests.app_process import running_app

ADMIN_PASSWORD = "a-long-admin-password"
ALICE = ("alice", "alices-password")  # role admin
BOB = ("bob", "bobs-password")
CAROL = ("carol", "carols-password")  # --chat-user
PROMPT_S = 3.0  # a session the database ended is refused within this (the guard checks once a second)


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    folder = tmp_path_factory.mktemp("accounts")
    data = folder / "data"
    store = AccountStore.open(data)  # what `python -m m3ui.users add` does before the first start
    store.add(*ALICE, "admin")
    store.add(*BOB)
    store.close()
    secret = folder / "admin.pw"
    secret.write_text(ADMIN_PASSWORD + "\n")
    secret.chmod(0o600)
    with running_app(folder, "--admin-password-file", str(secret), "--chat-user", ":".join(CAROL),
                     data_dir=data) as running:
        yield running


@pytest.fixture
def accounts(app):
    store = AccountStore.open(app.data_dir)  # a second connection, as the CLI or the admin panel would write
    yield store
    store.close()


def client(app) -> httpx.Client:
    return httpx.Client(base_url=app.url, trust_env=False, timeout=15)


def signed_in(c: httpx.Client, mount: str = "") -> bool:
    status = c.get(f"{mount}/gradio_api/login_check").status_code
    assert status in (200, 401)
    return status == 200


def login(c: httpx.Client, mount: str, user: str, password: str) -> int:
    return c.post(f"{mount}/login", data={"username": user, "password": password}).status_code


def wait_signed_out(c: httpx.Client, mount: str = "") -> float:
    start = time.monotonic()
    while signed_in(c, mount):
        assert time.monotonic() - start < PROMPT_S, "the session outlived its account"
        time.sleep(0.1)
    return time.monotonic() - start


def test_accounts_sign_in_to_the_apps_their_role_allows(app):
    with client(app) as c:
        assert not signed_in(c) and not signed_in(c, "/admin")
        assert login(c, "", *BOB) == SIGNED_IN and signed_in(c)
        assert login(c, "/admin", *BOB) == 400 and not signed_in(c, "/admin"), "a user account is no admin"
        assert login(c, "", "BOB", BOB[1]) == SIGNED_IN, "names are case-insensitive"
    with client(app) as c:
        assert login(c, "/admin", *ALICE) == SIGNED_IN and signed_in(c, "/admin")
        assert c.get("/admin/").status_code == 200
    with client(app) as c:
        assert login(c, "/admin", "admin", ADMIN_PASSWORD) == SIGNED_IN and signed_in(c, "/admin"), \
            "password still works"
        assert login(c, "", "admin", ADMIN_PASSWORD) == SIGNED_IN
    with client(app) as c:
        assert login(c, "", *CAROL) == SIGNED_IN, "--chat-user seeds an account"
        assert login(c, "", "bob", "wrong password") == 400
    assert "audit: chat login succeeded for user 'bob'" in app.log()
    assert "audit: admin login failed for user 'bob'" in app.log()


def test_chat_user_is_an_account(accounts):
    carol = accounts.get("carol")
    assert carol is not None and carol.role == "user" and carol.last_login_at is not None


def test_a_disabled_user_is_signed_out_everywhere_within_seconds(app, accounts):
    accounts.add("dave", "daves-password")
    with client(app) as phone, client(app) as laptop:
        assert login(phone, "", "dave", "daves-password") == SIGNED_IN
        assert login(laptop, "", "dave", "daves-password") == SIGNED_IN
        assert signed_in(phone) and signed_in(laptop)
        accounts.set_enabled("dave", False)
        wait_signed_out(phone)
        assert not signed_in(laptop), "every session of the user ended at once"
        assert login(phone, "", "dave", "daves-password") == 400, "and it cannot sign in again"
        accounts.set_enabled("dave", True)
        assert login(phone, "", "dave", "daves-password") == SIGNED_IN and signed_in(phone)
    assert "audit: sessions of 'dave' in the chat app ended" in app.log()


def test_a_demoted_admin_leaves_the_admin_app_but_keeps_chat(app, accounts):
    accounts.add("erin", "erins-password", "admin")
    with client(app) as c:
        assert login(c, "/admin", "erin", "erins-password") == SIGNED_IN
        assert login(c, "", "erin", "erins-password") == SIGNED_IN
        accounts.set_role("erin", "user")
        wait_signed_out(c, "/admin")
        assert signed_in(c), "still a user of the chat"


def test_sign_out_ends_this_session_only(app):
    with client(app) as c, client(app) as other:
        assert login(c, "", *BOB) == SIGNED_IN and login(other, "", *BOB) == SIGNED_IN
        assert c.get("/logout", params={"all_session": "false"}).status_code == 303
        assert not signed_in(c) and signed_in(other)


def test_sessions_expire(tmp_path):
    data = tmp_path / "data"
    AccountStore.open(data).add(*BOB)
    with running_app(tmp_path, "--session-hours", str(2 / 3600), data_dir=data) as short, client(short) as c:
        assert login(c, "", *BOB) == SIGNED_IN and signed_in(c)
        kept = dict(c.cookies)  # the browser forgets the cookie at its Max-Age; a copy kept longer must not work
        time.sleep(2.5)
        assert not signed_in(c), "a login older than --session-hours asks again"
        c.cookies.update(kept)
        assert not signed_in(c), "the server ends it too"
        assert "a session of 'bob' in the chat app expired" in short.log()


def test_an_admin_handler_refuses_a_user_session(app):
    """A user's chat cookie is no admin login: the admin app's API answers as to a stranger."""
    with client(app) as c:
        assert login(c, "", *BOB) == SIGNED_IN
        call = c.post("/admin/gradio_api/call/admin_stop", json={"data": []})
        assert call.status_code in (401, 403, 404)


def test_password_checks_do_not_stall_other_requests(app):
    """scrypt takes ~0.1 s of CPU per login: run on the event loop, 8 logins at once would hold every other
    request (and every streaming answer) for their sum."""
    import threading

    def sign_in() -> None:
        with client(app) as c:
            assert login(c, "", *BOB) == SIGNED_IN

    with client(app) as probe:
        probe.get("/gradio_api/login_check")
        logins = [threading.Thread(target=sign_in) for _ in range(8)]
        start = time.monotonic()
        for thread in logins:
            thread.start()
        waits = []
        while any(thread.is_alive() for thread in logins):
            sent = time.monotonic()
            probe.get("/gradio_api/login_check")
            waits.append(time.monotonic() - sent)
        took = time.monotonic() - start
        for thread in logins:
            thread.join()
    assert max(waits) < took / 2, f"a request waited {max(waits):.2f} s while 8 logins took {took:.2f} s"
