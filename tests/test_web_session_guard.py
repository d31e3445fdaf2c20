"""SessionGuard on its own (a table like Gradio's, a clock the test moves): a disabled user's sessions all end,
an expired one ends alone, a yes is remembered for CHECK_S only, websocket requests are checked as well, and a
changed password ends the sessions signed in before (but the one that changed it, issue 27 #3)."""

from __future__ import annotations

import asyncio

from starlette.requests import HTTPConnection

from m3ui.ui.gradio_contacts.logins import GradioSessions
from m3ui.web.mounts import GradioMount
from m3ui.web.session_guard import SessionGuard
from m3ui.web.session_stamps import CHECK_S, SessionStamps


class Served:
    """What GradioSessions reads of a mounted Gradio app."""

    def __init__(self) -> None:
        self.auth, self.cookie_id = object(), "c1"
        self.tokens: dict[str, str] = {}


class Table(GradioSessions):
    def __init__(self) -> None:
        self.served = Served()


def scope(token: str, kind: str = "http") -> dict:
    cookie = f"access-token-c1={token}".encode()
    return {"type": kind, "path": "/gradio_api/queue/join", "headers": [(b"cookie", cookie)]}


def setup(allowed: set[str], max_age: float = 100.0, passwords: dict[str, str] | None = None):
    table, now, passwords = Table(), [0.0], passwords or {}

    async def app(scope, receive, send):
        assert HTTPConnection(scope).cookies  # the request goes on, its cookie intact

    checks: list[str] = []

    def check(user: str, admin_app: bool) -> str | None:
        checks.append(user)
        user = user.lower()  # as the accounts match names
        return passwords.get(user, "") if user in allowed else None

    mount = GradioMount("", "chat", {}, False, table.logged_in, table)
    guard = SessionGuard(app, (mount,), SessionStamps(check), max_age, clock=lambda: now[0])
    return table, guard, now, checks


def run(guard, s) -> None:
    asyncio.run(guard(s, None, None))


def test_a_disabled_user_loses_every_session_and_others_keep_theirs():
    allowed = {"bob", "carol"}
    table, guard, now, _ = setup(allowed)
    table.served.tokens.update({"t1": "bob", "t2": "bob", "t3": "carol"})
    run(guard, scope("t1"))
    allowed.discard("bob")
    now[0] += CHECK_S + 0.1
    run(guard, scope("t3"))
    assert "t1" in table.served.tokens, "carol's request ends nobody's session"
    run(guard, scope("t1", "websocket"))
    assert table.served.tokens == {"t3": "carol"}


def test_a_yes_is_remembered_for_a_second_a_no_never():
    allowed = {"bob"}
    table, guard, now, checks = setup(allowed)
    table.served.tokens["t1"] = "bob"
    for _ in range(5):
        run(guard, scope("t1"))
    assert checks == ["bob"]
    now[0] += CHECK_S + 0.1
    allowed.clear()
    run(guard, scope("t1"))
    assert table.served.tokens == {}
    allowed.add("bob")  # enabled again and signed in anew: not ended by a remembered no
    table.served.tokens["t9"] = "bob"
    run(guard, scope("t9"))
    assert table.served.tokens == {"t9": "bob"}


def test_an_expired_session_ends_alone():
    table, guard, now, _ = setup({"bob"}, max_age=10)
    table.served.tokens.update({"old": "bob"})
    run(guard, scope("old"))
    now[0] += 8
    table.served.tokens["new"] = "bob"
    run(guard, scope("new"))
    now[0] += 3
    run(guard, scope("old"))
    run(guard, scope("new"))
    assert table.served.tokens == {"new": "bob"}


def test_a_changed_password_ends_the_sessions_signed_in_before_it_but_the_renewed_one():
    passwords = {"bob": "first"}
    table, guard, now, _ = setup({"bob", "carol"}, passwords=passwords)
    table.served.tokens.update({"asking": "bob", "stolen": "Bob", "carol": "carol"})
    for token in list(table.served.tokens):
        run(guard, scope(token))
    passwords["bob"] = "second"  # changed by the asking page (or in another process: then nobody is renewed)
    guard.stamps.renew("asking", "bob")
    run(guard, scope("stolen"))
    assert "stolen" not in table.served.tokens, "the stamp is read again at once for a renewed user"
    now[0] += CHECK_S + 0.1
    for token in ("asking", "carol"):
        run(guard, scope(token))
    assert table.served.tokens == {"asking": "bob", "carol": "carol"}
    table.served.tokens["new"] = "bob"  # a login with the new password
    run(guard, scope("new"))
    assert "new" in table.served.tokens


def test_tokens_gradio_no_longer_holds_are_forgotten():
    table, guard, _, _ = setup({"bob"})
    for n in range(300):
        table.served.tokens[f"t{n}"] = "bob"
        run(guard, scope(f"t{n}"))
        del table.served.tokens[f"t{n}"]  # signed out
    assert len(guard._born) <= 130 and len(guard.stamps) <= 130
