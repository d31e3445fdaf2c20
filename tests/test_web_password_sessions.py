"""A password change ends the account's other sessions (issue 27 #3), on the real app over raw HTTP: the Account
tab's change signs out every other device (whatever case the name was typed in) and keeps the asking one; an
admin's reset in the Users tab, or `python -m m3ui.users passwd` run beside the app, signs the account out
everywhere. A stolen cookie outlives none of them."""

import re
import subprocess
import sys

import pytest

from tests.account_calls import (
    admin_reset,
    change_password,
    data_with_accounts,
    from_address,
    refusal,
    signed_in,
    still_signed_in,
)
from tests.app_process import ROOT, running_app

ADMIN_PASSWORD = "a-long-admin-password"
ALICE = ("alice", "alices-password")
BOB = ("bob", "bobs-password")
CAROL = ("carol", "carols-password")
DAVE = ("dave", "daves-password")


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    folder = tmp_path_factory.mktemp("password-sessions")
    data = data_with_accounts(folder, ALICE, BOB, CAROL, DAVE)
    secret = folder / "admin.pw"
    secret.write_text(ADMIN_PASSWORD + "\n")
    secret.chmod(0o600)
    with running_app(folder, "--admin-password-file", str(secret), data_dir=data) as running:
        yield running


def test_a_change_ends_the_other_sessions_and_keeps_the_asking_one(app):
    with signed_in(app, "127.0.0.1", *ALICE) as asking, signed_in(app, "127.0.0.2", "ALICE", ALICE[1]) as stolen, \
            signed_in(app, "127.0.0.3", *ALICE) as other, signed_in(app, "127.0.0.4", *BOB) as bob:
        assert all(still_signed_in(c) for c in (asking, stolen, other, bob))
        assert refusal(change_password(asking, ALICE[1], "alices-new-password")) is None
        assert not still_signed_in(stolen) and not still_signed_in(other)
        assert still_signed_in(asking) and still_signed_in(bob), "the asking page and other accounts stay"
        assert stolen.post("/login", data={"username": ALICE[0], "password": ALICE[1]}).status_code == 400
    assert "audit: password of 'alice' changed from 127.0.0.1; 2 other sessions ended" in app.log()


def test_an_admin_reset_signs_the_account_out_everywhere(app):
    with signed_in(app, "127.0.0.5", BOB[0], BOB[1]) as first, signed_in(app, "127.0.0.6", "Bob", BOB[1]) as second, \
            signed_in(app, "127.0.0.7", "admin", ADMIN_PASSWORD, "/admin") as admin:
        event = admin_reset(admin, BOB[0], "bobs-new-password")
        assert event.get("success"), event
        assert not still_signed_in(first) and not still_signed_in(second)
        assert still_signed_in(admin, "/admin")
    ended = re.search(r"audit: password of 'bob' reset in the admin app; (\d+) sessions ended", app.log())
    assert ended and int(ended.group(1)) >= 2, "both of bob's sessions (and any left from earlier tests)"


def test_a_change_made_by_the_command_line_ends_the_sessions_at_once(app):
    with signed_in(app, "127.0.0.8", *CAROL) as carol:
        assert still_signed_in(carol)
        changed = subprocess.run([sys.executable, "-m", "m3ui.users", "--data-dir", str(app.data_dir), "passwd",
                                  CAROL[0]], input="carols-new-password\n", capture_output=True, text=True, cwd=ROOT,
                                 timeout=60)
        assert changed.returncode == 0, changed.stderr
        assert not still_signed_in(carol)
    assert "audit: a session of 'carol' in the chat app ended: the password changed since its login" in app.log()


def test_signing_out_ends_the_session_at_the_server_and_everywhere_every_spelling_of_the_name(app):
    """Sign-out ends the session at the server (a copy of its cookie signs nobody in), and "every device" ends
    the sessions signed in under every spelling of the name."""
    with signed_in(app, "127.0.0.9", "Dave", DAVE[1]) as one, signed_in(app, "127.0.0.10", "DAVE", DAVE[1]) as other, \
            signed_in(app, "127.0.0.11", *DAVE) as third:
        stolen = dict(one.cookies)
        assert one.get("/logout?all_session=false").status_code == 303
        assert not still_signed_in(one) and still_signed_in(other), "this device only"
        with from_address(app, "127.0.0.12") as thief:
            thief.cookies.update(stolen)
            assert not still_signed_in(thief), "the cookie signed out is no longer a session"
        assert other.get("/logout").status_code == 303
        assert not still_signed_in(other) and not still_signed_in(third)
    assert "audit: 'dave' signed out on every device in the chat app (2 sessions)" in app.log()
