"""Ends the Gradio sessions the accounts no longer allow, on the request that would have used them.

Gradio keeps its logins in memory (a token in a cookie, mapped to the user name in the mounted app's `tokens`)
and never looks at them again: a user disabled in the database would stay signed in until the app restarts.
Every request that carries a session is therefore checked here, before Gradio sees it (the account is read at
most once per CHECK_S per user, m3ui.web.session_stamps): a session whose account is disabled (or, in the admin
app, no longer an admin), whose password changed since its login, or that is older than the session lifetime
is deleted from Gradio's table, so Gradio answers that request, and every later one, as not signed in. A disabled
user's sessions all end at once, on every device; the page script (assets/js/session_watch.js) shows the login
form. A sign-out (Gradio's /logout) is done here too: Gradio's own ends, on every device, only the sessions signed
in with the very spelling of the asking one's name, and on this device, only a session whose cookie is the https
one (over plain http the session went on at the server, though the page forgot its cookie).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from urllib.parse import parse_qs

from starlette.types import ASGIApp, Receive, Scope, Send

from m3ui.web.mounts import GradioMount, SessionTable, mount_for
from m3ui.web.session_stamps import SessionStamps

AUDIT = logging.getLogger("m3ui.audit")
YES = ("1", "on", "t", "true", "y", "yes")  # what Gradio's `all_session` query value reads as true


def sign_out(subpath: str, scope: Scope) -> str | None:
    """For Gradio's /logout: "everywhere" (its default) or "here"; None for any other request."""
    if subpath.rstrip("/") != "/logout":
        return None
    given = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("all_session")
    return "everywhere" if given is None or given[-1].lower() in YES else "here"


class SessionGuard:
    def __init__(self, app: ASGIApp, mounts: tuple[GradioMount, ...], stamps: SessionStamps, max_age_s: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.app = app
        self.mounts = tuple(m for m in mounts if m.sessions is not None)
        self.stamps, self.max_age_s, self.clock = stamps, max_age_s, clock
        self._born: dict[str, float] = {}  # token -> when this guard first saw it (right after its login)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        found = mount_for(scope["path"], self.mounts) if scope["type"] in ("http", "websocket") else None
        session = _session(found[0], scope) if found is not None else None
        if found is not None and session is not None:
            self._enforce(found[0], *session)
            if (where := sign_out(found[1], scope)) is not None:
                _sign_out(found[0], *session, where)
        await self.app(scope, receive, send)

    def _enforce(self, mount: GradioMount, table: SessionTable, token: str, user: str) -> None:
        now = self.clock()
        born = self._born.setdefault(token, now)
        admin_app = mount.name == "admin"
        if now - born > self.max_age_s:
            table.end(token)
            AUDIT.info("audit: a session of %r in the %s app expired", user, mount.name)
        elif (stamp := self.stamps.current(user, admin_app, now)) is None:
            if table.end_user(user):
                AUDIT.warning("audit: sessions of %r in the %s app ended: the account is disabled or not allowed "
                              "there", user, mount.name)
        elif not self.stamps.matches(token, stamp):
            table.end(token)
            AUDIT.info("audit: a session of %r in the %s app ended: the password changed since its login", user,
                       mount.name)
        if len(self._born) <= 128:
            return
        held = [m.sessions.tokens() for m in self.mounts if m.sessions is not None]
        if len(self._born) > 2 * sum(map(len, held)):  # forget tokens Gradio no longer holds
            every = set().union(*held)
            self._born = {t: at for t, at in self._born.items() if t in every}
            self.stamps.forget_except(every)


def _session(mount: GradioMount, scope: Scope) -> tuple[SessionTable, str, str] | None:
    """The app's table, the token and the user of a request's session (None: it carries none)."""
    table = mount.sessions
    token = table.token(scope) if table is not None else None
    user = table.user(token) if table is not None and token is not None else None
    return (table, token, user) if table is not None and token is not None and user is not None else None


def _sign_out(mount: GradioMount, table: SessionTable, token: str, user: str, where: str) -> None:
    if where == "here":
        table.end(token)
        AUDIT.info("audit: %r signed out on one device in the %s app", user, mount.name)
    else:
        ended = table.end_user(user)
        AUDIT.info("audit: %r signed out on every device in the %s app (%d sessions)", user, mount.name, ended)
