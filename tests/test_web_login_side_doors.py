"""The login throttle has no side door (issue 27 #2), on the real app over raw HTTP: m3ui's /login takes
multipart forms as well as urlencoded ones, accounts match names without case, and the Account tab checks the
current password too; guesses by each of these ways, spread over many client addresses, are all counted under
the one account (FREE_FAILURES evaluated, the rest refused with 429), and each is one audit line."""

import pytest

from m3ui.web.login_throttle import FREE_FAILURES
from tests.account_calls import SIGNED_IN, change_password, data_with_accounts, from_address, refusal, signed_in
from tests.app_process import running_app

VICTIM = ("victim", "victims-password")
ALICE = ("alice", "alices-password")
CAROL = ("carol", "carols-password")

def spellings(name: str) -> list[str]:
    """The name with each letter in upper case in turn, all in upper case, and padded (the login strips names)."""
    return [name[:i] + name[i].upper() + name[i + 1:] for i in range(len(name))] + [name.upper(), f" {name.title()} "]


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    folder = tmp_path_factory.mktemp("side-doors")
    with running_app(folder, data_dir=data_with_accounts(folder, VICTIM, ALICE, CAROL)) as running:
        yield running


def guesses(app, names: list[str], multipart: bool, first_address: int) -> list[int]:
    """One wrong guess per name, each from its own client address; the answers' statuses."""
    statuses = []
    for n, name in enumerate(names):
        form = {"username": name, "password": f"guess-{n}"}
        with from_address(app, f"127.0.{first_address + n}.1") as c:
            # files= makes httpx send multipart/form-data (the fields as its parts)
            answer = c.post("/login", files={k: (None, v) for k, v in form.items()}) if multipart else \
                c.post("/login", data=form)
        statuses.append(answer.status_code)
    return statuses


def counted_once(statuses: list[int]) -> bool:
    """FREE_FAILURES guesses evaluated, then refused: the next ones come well within the first wait (2 s), and
    at most one more is evaluated once it is over."""
    return (statuses[:FREE_FAILURES] == [400] * FREE_FAILURES and statuses[FREE_FAILURES:FREE_FAILURES + 4] == [429] * 4
            and statuses.count(400) <= FREE_FAILURES + 1)


def test_multipart_guesses_from_many_addresses_are_counted_for_the_user(app):
    statuses = guesses(app, [VICTIM[0]] * 12, multipart=True, first_address=10)
    assert counted_once(statuses), statuses
    with from_address(app, "127.0.99.1") as c:
        assert c.post("/login", files={"username": (None, ALICE[0]), "password": (None, ALICE[1])}).status_code \
            == SIGNED_IN, "a right multipart login of another account goes through"


def test_case_variants_share_the_account_record(app):
    names = spellings(CAROL[0])
    assert len(names) == 7
    statuses = guesses(app, names + names, multipart=False, first_address=40)
    assert counted_once(statuses), statuses


def test_a_form_gradio_would_read_another_name_from_is_refused(app):
    with from_address(app, "127.0.98.1") as c:
        doubled = c.post("/login", content=b"username=decoy&username=alice&password=x",
                         headers={"content-type": "application/x-www-form-urlencoded"})
        nameless = c.post("/login", files={"password": (None, "x")})
        as_json = c.post("/login", json={"username": "alice", "password": "x"})
    for answer in (doubled, nameless, as_json):
        assert answer.status_code == 400 and answer.text.startswith("login refused: send one username"), \
            (answer.status_code, answer.text[:200])
    assert "login failed for user 'decoy'" not in app.log()


def test_the_account_tabs_password_check_is_throttled_and_audited(app):
    with signed_in(app, "127.0.97.1", *ALICE) as c:
        answers = [refusal(change_password(c, f"guess-{n}", "a-new-password")) for n in range(FREE_FAILURES + 2)]
        assert answers[:FREE_FAILURES] == ["The current password is not right."] * FREE_FAILURES, answers
        assert all(a.startswith("Too many wrong passwords: try again in ") for a in answers[FREE_FAILURES:]), answers
        # the right password waits too: the throttle does not look at it
        assert refusal(change_password(c, ALICE[1], "a-new-password")).startswith("Too many wrong passwords")
    with from_address(app, "127.0.96.1") as other:
        assert other.post("/login", data={"username": "ALICE", "password": ALICE[1]}).status_code == 429, \
            "guesses in the Account tab count for the login form too"
    log = app.log()
    assert "audit: password change refused for user 'alice' from 127.0.97.1: wrong current password " \
           "(1 failures in a row)" in log
    assert "audit: password change throttled for user 'alice' from 127.0.97.1" in log
    assert "Traceback" not in log and "ERROR" not in log, log[-3000:]
    assert "guess-" not in log and ALICE[1] not in log
