"""Throttles and audits the logins of both apps (Gradio's POST /login and /admin/login).

The login form is read here (to know the user name), answered 429 while the throttle says wait, and
otherwise passed on; Gradio's answer (200 logged in, 400 wrong credentials) is recorded and written to the
audit log (logger `m3ui.audit`): who, from where, which app — never the password.

The form is parsed by the same code as Gradio's (Starlette's, urlencoded or multipart), and a login whose form
does not carry exactly one user name is refused before Gradio sees it: no form Gradio would check can reach it
without being counted under the name it checks.
"""

from __future__ import annotations

import logging
import math

from starlette.exceptions import HTTPException
from starlette.formparsers import MultiPartException
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from m3ui.web.asgi import BodyTooLarge, client_address, read_body, refuse, replaying
from m3ui.web.login_throttle import LoginThrottle

AUDIT = logging.getLogger("m3ui.audit")
FORM_LIMIT = 16 * 1024


async def _user_of(scope: Scope, body: bytes) -> str | None:
    """The one user name the login form carries (None: none, several, or no form Gradio would read)."""

    async def nothing_more() -> Message:
        return {"type": "http.disconnect"}

    try:
        form = await Request(scope, replaying(body, nothing_more)).form()
    except (HTTPException, MultiPartException):
        return None
    try:
        names = form.getlist("username")
    finally:
        await form.close()
    return names[0].strip()[:100] if len(names) == 1 and isinstance(names[0], str) else None


class LoginGuard:
    def __init__(self, app: ASGIApp, mounts: dict[str, str], throttle: LoginThrottle | None = None) -> None:
        """`mounts`: mount prefix → the app's name in the audit log ("" → "chat", "/admin" → "admin")."""
        self.app = app
        self.logins = {f"{prefix}/login{slash}": name for prefix, name in mounts.items() for slash in ("", "/")}
        self.throttle = throttle or LoginThrottle()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        which = self.logins.get(scope["path"]) if scope["type"] == "http" and scope["method"] == "POST" else None
        if which is None:
            await self.app(scope, receive, send)
            return
        client = client_address(scope)
        try:
            body = await read_body(receive, FORM_LIMIT)
        except BodyTooLarge as exc:
            await refuse(scope, receive, send, 413, f"login refused: {exc}")
            return
        user = await _user_of(scope, body)
        if user is None:
            await refuse(scope, receive, send, 400, "login refused: send one username and a password as a form "
                         "(urlencoded or multipart)")
            return
        keys = self.throttle.keys(client, user)
        wait = self.throttle.wait_seconds(keys)
        if wait > 0:
            AUDIT.warning("audit: %s login throttled for user %r from %s (retry in %.0f s)", which, user, client, wait)
            await refuse(scope, receive, send, 429, f"too many failed logins: try again in {math.ceil(wait)} s",
                         [("retry-after", str(math.ceil(wait)))])
            return
        answered: list[int] = []

        async def noting(message: Message) -> None:
            # Counted and audited before the answer leaves: a client never sees the answer to one attempt
            # before that attempt counts (its next try is throttled, its audit line is already written).
            if message["type"] == "http.response.start" and not answered:
                answered.append(message["status"])
                self._record(which, user, client, keys, message["status"])
            await send(message)

        await self.app(scope, replaying(body, receive), noting)

    def _record(self, which: str, user: str | None, client: str, keys: list[str], status: int) -> None:
        if status == 200:
            self.throttle.succeeded(keys)
            AUDIT.info("audit: %s login succeeded for user %r from %s", which, user, client)
        elif status in (400, 401, 403):
            failures = self.throttle.failed(keys)
            AUDIT.warning("audit: %s login failed for user %r from %s (%d failures in a row)", which, user, client,
                          failures)
