"""Ends the Gradio sessions the accounts no longer allow, on the request that would have used them.

Gradio keeps its logins in memory (a token in a cookie, mapped to the user name in the mounted app's `tokens`)
and never looks at them again: a user disabled in the database would stay signed in until the app restarts.
Every request that carries a session is therefore checked here, before Gradio sees it (the answer is cached
for CHECK_S per user, so a page's bursts of requests cost one database read): a session whose account is
disabled (or, in the admin app, no longer an admin) or that is older than the session lifetime is deleted from
Gradio's table, so Gradio answers that request, and every later one, as not signed in. A disabled user's
sessions all end at once, on every device; the page script (assets/js/session_watch.js) shows the login form.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from starlette.types import ASGIApp, Receive, Scope, Send

from m3ui.web.mounts import GradioMount, mount_for

AUDIT = logging.getLogger("m3ui.audit")
CHECK_S = 1.0


# (user name, whether the app is the admin app) -> whether its sessions may go on
SessionCheck = Callable[[str, bool], bool]


class SessionGuard:
    def __init__(self, app: ASGIApp, mounts: tuple[GradioMount, ...], check: SessionCheck, max_age_s: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.app = app
        self.mounts = tuple(m for m in mounts if m.sessions is not None)
        self.check, self.max_age_s, self.clock = check, max_age_s, clock
        self._born: dict[str, float] = {}  # token -> when this guard first saw it (right after its login)
        self._allowed_at: dict[tuple[str, bool], float] = {}  # (user, admin app) -> when last found allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            found = mount_for(scope["path"], self.mounts)
            if found is not None:
                self._enforce(found[0], scope)
        await self.app(scope, receive, send)

    def _enforce(self, mount: GradioMount, scope: Scope) -> None:
        table = mount.sessions
        assert table is not None
        token = table.token(scope)
        user = table.user(token) if token else None
        if token is None or user is None:
            return
        now = self.clock()
        born = self._born.setdefault(token, now)
        if now - born > self.max_age_s:
            table.end(token)
            AUDIT.info("audit: a session of %r in the %s app expired", user, mount.name)
        elif not self._allowed(user, mount.name == "admin", now) and table.end_user(user):
            AUDIT.warning("audit: sessions of %r in the %s app ended: the account is disabled or not allowed there",
                          user, mount.name)
        if len(self._born) > 2 * max(64, len(table.tokens())):  # forget tokens Gradio no longer holds
            held = table.tokens()
            self._born = {t: at for t, at in self._born.items() if t in held}

    def _allowed(self, user: str, admin_app: bool, now: float) -> bool:
        key = (user, admin_app)
        checked_at = self._allowed_at.get(key)
        if checked_at is not None and now - checked_at <= CHECK_S:
            return True
        # Only a yes is remembered: a no ends the sessions, and a new login (after the account is enabled
        # again) must not be ended by a stale no.
        if not self.check(user, admin_app):
            self._allowed_at.pop(key, None)
            return False
        if len(self._allowed_at) > 10_000:
            self._allowed_at.clear()
        self._allowed_at[key] = now
        return True
