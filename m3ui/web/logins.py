"""Who a request of one app is: m3ui's own session cookie, checked against the sessions and the accounts each time.

Gradio is told through its public hook (`auth_dependency` of `gr.mount_gradio_app`, `Logins.gradio_user`), and the
guards and the page's own routes ask the same check, so there is one answer. A session goes on only while its row
exists, is younger than the session lifetime, its account may use the app (enabled; an admin, in the admin app),
and the account's password is the one it was signed in with: a disable, a demotion, a password change (in any
process sharing the database) or a sign-out ends it on its next request, on every device.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from starlette.requests import HTTPConnection
from starlette.types import Scope

from m3ui.accounts.sessions import SessionStore

AUDIT = logging.getLogger("m3ui.audit")
# (user name, whether the app is the admin app) -> None when its sessions may not go on, else its password's stamp
SessionCheck = Callable[[str, bool], str | None]


class Logins:
    def __init__(self, app: str, prefix: str, store: SessionStore, check: SessionCheck, max_age_s: float) -> None:
        """`app`: "chat" or "admin"; `prefix`: where it is mounted ("" or "/admin")."""
        self.app, self.prefix, self.store, self.check, self.max_age_s = app, prefix, store, check, max_age_s
        cookie_id = store.cookie_id()
        self.cookie = f"m3ui-session-{cookie_id}" if app == "chat" else f"m3ui-{app}-session-{cookie_id}"

    def token_in(self, cookies: Mapping[str, str]) -> str | None:
        return cookies.get(self.cookie) or None

    def token(self, scope: Scope) -> str | None:
        return self.token_in(HTTPConnection(scope).cookies)  # http or websocket

    def user(self, scope: Scope) -> str | None:
        """Who the request is signed in as (None: nobody, or a session that ended)."""
        token = self.token(scope)
        return self.user_of(token) if token is not None else None

    async def gradio_user(self, request: HTTPConnection) -> str | None:
        """Gradio's `auth_dependency`."""
        return self.user(request.scope)

    def user_of(self, token: str) -> str | None:
        session = self.store.find(token)
        if session is None or session.app != self.app:
            return None
        if self.store.clock() - session.created_at > self.max_age_s:
            self.store.end(token)
            AUDIT.info("audit: a session of %r in the %s app expired", session.user, self.app)
            return None
        stamp = self.check(session.user, self.app == "admin")
        if stamp is None:
            ended = self.store.end_user(session.user, self.app)
            AUDIT.warning("audit: sessions of %r in the %s app ended (%d): the account is disabled or not allowed "
                          "there", session.user, self.app, ended)
            return None
        if stamp != session.stamp:
            self.store.end(token)
            AUDIT.info("audit: a session of %r in the %s app ended: the password changed since its login",
                       session.user, self.app)
            return None
        return session.user

    def start(self, user: str) -> str | None:
        """A new session for a login just checked (None: the account may not use this app after all)."""
        stamp = self.check(user, self.app == "admin")
        return self.store.start(user, self.app, stamp, self.max_age_s) if stamp is not None else None

    def set_cookie(self, token: str) -> str:
        """Over https it is marked Secure on its way out (m3ui.web.secure_cookies, as every cookie is)."""
        return (f"{self.cookie}={token}; Path={self.prefix or '/'}; Max-Age={int(self.max_age_s)}; HttpOnly; "
                "SameSite=Lax")

    def clear_cookie(self) -> str:
        return f"{self.cookie}=; Path={self.prefix or '/'}; Max-Age=0; HttpOnly; SameSite=Lax"


def end_sessions(logins: tuple[Logins, ...], user: str, cookies: Mapping[str, str]) -> int:
    """End `user`'s sessions in every app but the ones `cookies` carry (the device that changed the password: its
    sessions are stamped with the new one); how many were ended."""
    ended = 0
    for app in logins:
        keep = app.token_in(cookies)
        ended += app.store.end_user(user, app.app, keep=keep)
        stamp = app.check(user, app.app == "admin")
        if keep is not None and stamp is not None:
            app.store.restamp(keep, user, stamp)
    return ended
