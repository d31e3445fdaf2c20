"""Logins on the real app (`--admin-password-file`, `--chat-user`), over raw HTTP (issue 9 #2, #4): wrong
passwords are throttled per client and per user (429 after a few), even the right password waits out the
throttle, and every admin login, failed or not, lands in the audit log — without the password."""

import httpx
import pytest

from m3ui.web.login_throttle import FREE_FAILURES
from tests.account_calls import SIGNED_IN, from_address
from tests.app_process import running_app

ADMIN_PASSWORD = "a-long-admin-password"
BOB = ("bob", "bobs-password")


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    folder = tmp_path_factory.mktemp("logins")
    secret = folder / "admin.pw"
    secret.write_text(ADMIN_PASSWORD + "\n")
    secret.chmod(0o600)
    with running_app(folder, "--admin-password-file", str(secret), "--chat-user", ":".join(BOB)) as running:
        yield running


def login(c: httpx.Client, mount: str, user: str, password: str) -> httpx.Response:
    return c.post(f"{mount}/login", data={"username": user, "password": password})


def test_wrong_logins_are_throttled_per_client_and_user_and_audited(app):
    with from_address(app, "127.0.0.1") as c, from_address(app, "127.0.0.2") as other:
        assert login(c, "/admin", "admin", ADMIN_PASSWORD).status_code == SIGNED_IN
        answers = [login(c, "/admin", "admin", f"guess-{n}").status_code for n in range(10)]
        assert answers[:FREE_FAILURES] == [400] * FREE_FAILURES
        assert set(answers[FREE_FAILURES:]) == {429}
        locked = login(c, "/admin", "admin", ADMIN_PASSWORD)
        assert locked.status_code == 429 and int(locked.headers["retry-after"]) >= 1
        assert "too many failed logins" in locked.text
        assert login(other, "/admin", "admin", ADMIN_PASSWORD).status_code == 429, "the user is throttled anywhere"
        assert login(c, "", *BOB).status_code == 429, "the client is throttled for any user"
        assert login(other, "", *BOB).status_code == SIGNED_IN, "another client, another user: not throttled"
    log = app.log()
    assert "audit: admin login succeeded for user 'admin' from 127.0.0.1" in log
    assert "audit: admin login failed for user 'admin' from 127.0.0.1 (1 failures in a row)" in log
    assert "audit: admin login throttled for user 'admin' from 127.0.0.2" in log
    assert "audit: chat login succeeded for user 'bob' from 127.0.0.2" in log
    assert ADMIN_PASSWORD not in log and "guess-" not in log


def test_the_password_file_is_read_and_never_on_the_command_line(app):
    assert ADMIN_PASSWORD not in " ".join(app.process.args)
    assert "admin password is short" not in app.log() and "visible to every user" not in app.log()


def test_a_forged_forwarded_for_header_does_not_escape_the_client_throttle(app):
    """Without --trusted-proxy, X-Forwarded-For is ignored: a local process cannot pose as a new client for
    each guess (uvicorn's default believes it from 127.0.0.1), and the audit log names the real address."""
    with from_address(app, "127.0.0.3") as c:
        answers = [c.post("/login", data={"username": f"guess-user-{n}", "password": "x"},
                          headers={"X-Forwarded-For": f"203.0.113.{n}"}).status_code for n in range(FREE_FAILURES + 3)]
    assert answers[:FREE_FAILURES] == [400] * FREE_FAILURES
    assert set(answers[FREE_FAILURES:]) == {429}, answers
    log = app.log()
    assert "audit: chat login throttled for user 'guess-user-" in log and "from 127.0.0.3" in log
    assert "203.0.113." not in log


def test_a_question_said_at_the_click_needs_the_chat_login(app):
    """The page's early ask (m3ui.live.early_ask) sends engine requests: never for a visitor who is not signed in."""
    ask = {"text": "Count to 3", "thinking_mode": "disabled", "temperature": 0.6, "top_p": 0.95, "max_tokens": 64,
           "stall_seconds": 60, "keep_reasoning": False, "system_prompt": "", "tools": False}
    with from_address(app, "127.0.0.9") as c:
        assert c.post("/m3ui-live/" + "t" * 24 + "/ask", json=ask).status_code == 401
        assert login(c, "", *BOB).status_code == SIGNED_IN
        signed_in = c.post("/m3ui-live/" + "t" * 24 + "/ask", json=ask)
        assert signed_in.status_code == 200 and signed_in.json() == {"sent": False}  # (no page of that ticket)
