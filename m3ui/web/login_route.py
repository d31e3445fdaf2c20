"""m3ui's own sign-in, sign-out and session routes of both apps (`/login`, `/admin/login`, `…/logout`,
`…/m3ui-session`), served before Gradio, which learns who a request is through `auth_dependency` (m3ui.web.logins).

A login is throttled (m3ui.web.login_throttle) and audited here (logger `m3ui.audit`): who, from where, which app —
never the password. The form is read by Starlette's parser, urlencoded or multipart, and one that does not carry
exactly one user name and one password is refused before any password is checked: every guess checked is counted
under the name checked. A page of an app asked for without a session is sent to its sign-in page (Gradio would
answer a bare 401).
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import parse_qs

from starlette.exceptions import HTTPException
from starlette.formparsers import MultiPartException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from m3ui.web.asgi import BodyTooLarge, client_address, header, read_body, refuse, replaying
from m3ui.web.login_page import WRONG, login_page
from m3ui.web.login_throttle import LoginThrottle
from m3ui.web.logins import Logins

AUDIT = logging.getLogger("m3ui.audit")
FORM_LIMIT = 16 * 1024
YES = ("1", "on", "t", "true", "y", "yes")  # an `all_session` value that means every device
SESSION_PATH = "/m3ui-session"  # 200 while signed in, else 401 (assets/js/session_watch.js)


@dataclass(frozen=True)
class LoginDoor:
    """One app's sign-in: its sessions, its password check and the line its sign-in page shows."""
    logins: Logins
    check: Callable[[str, str], bool]
    message: str
    signup: bool = False  # whether the page links to the sign-up page


async def _form(scope: Scope, body: bytes) -> tuple[str, str] | None:
    """The one user name and password the form carries (None: none, several, or no form)."""

    async def nothing_more() -> Message:
        return {"type": "http.disconnect"}

    try:
        form = await Request(scope, replaying(body, nothing_more)).form()
    except (HTTPException, MultiPartException):
        return None
    try:
        names, passwords = form.getlist("username"), form.getlist("password")
    finally:
        await form.close()
    if len(names) != 1 or len(passwords) != 1 or not isinstance(names[0], str) or not isinstance(passwords[0], str):
        return None
    return names[0].strip()[:100], passwords[0]


class LoginRoute:
    def __init__(self, app: ASGIApp, doors: tuple[LoginDoor, ...], throttle: LoginThrottle, head: str) -> None:
        """`head`: what the sign-in page carries in its <head> (the theme script)."""
        self.app, self.throttle, self.head = app, throttle, head
        self.routes: dict[str, tuple[LoginDoor, str]] = {}
        for door in doors:
            prefix = door.logins.prefix
            for kind in ("login", "logout"):
                self.routes[f"{prefix}/{kind}"] = self.routes[f"{prefix}/{kind}/"] = (door, kind)
            self.routes[prefix + SESSION_PATH] = (door, "session")
            for page in {prefix or "/", prefix + "/"}:
                self.routes[page] = (door, "page")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        found = self.routes.get(scope["path"]) if scope["type"] == "http" else None
        if found is None:
            await self.app(scope, receive, send)
            return
        door, kind = found
        method = scope["method"]
        if kind == "page" and method in ("GET", "HEAD") and door.logins.user(scope) is None:
            query = scope.get("query_string", b"").decode("latin-1")  # ?__theme= and the like go along
            where = door.logins.prefix + "/login" + (f"?{query}" if query else "")
            await _see_other(scope, where)(scope, receive, send)
        elif kind == "login" and method == "POST":
            await self._login(door, scope, receive, send)
        elif kind == "login":
            await HTMLResponse(self._page(door, scope), headers={"cache-control": "no-store"})(scope, receive, send)
        elif kind == "logout":
            await self._logout(door, scope)(scope, receive, send)
        elif kind == "session":
            signed_in = door.logins.user(scope) is not None
            await PlainTextResponse("signed in" if signed_in else "signed out", status_code=200 if signed_in else 401,
                                    headers={"cache-control": "no-store"})(scope, receive, send)
        else:
            await self.app(scope, receive, send)

    def _page(self, door: LoginDoor, scope: Scope, name: str = "", failed: str = "") -> str:
        root = scope.get("root_path", "")
        return login_page(f"{root}{door.logins.prefix}/login", door.message, self.head, name, failed,
                          f"{root}/signup" if door.signup else "")

    async def _login(self, door: LoginDoor, scope: Scope, receive: Receive, send: Send) -> None:
        which, client = door.logins.app, client_address(scope)
        try:
            body = await read_body(receive, FORM_LIMIT)
        except BodyTooLarge as exc:
            await refuse(scope, receive, send, 413, f"login refused: {exc}")
            return
        form = await _form(scope, body)
        if form is None:
            await refuse(scope, receive, send, 400, "login refused: send one username and a password as a form "
                         "(urlencoded or multipart)")
            return
        user, password = form
        keys = self.throttle.keys(client, user)
        wait = math.ceil(self.throttle.wait_seconds(keys))
        if wait > 0:
            AUDIT.warning("audit: %s login throttled for user %r from %s (retry in %d s)", which, user, client, wait)
            page = self._page(door, scope, user, f"too many failed logins: try again in {wait} s")
            await HTMLResponse(page, status_code=429, headers={"retry-after": str(wait)})(scope, receive, send)
            return

        def sign_in() -> str | None:  # scrypt takes a tenth of a second of CPU: not on the event loop
            return door.logins.start(user) if door.check(user, password) else None

        token = await asyncio.to_thread(sign_in)
        if token is None:
            failures = self.throttle.failed(keys)
            AUDIT.warning("audit: %s login failed for user %r from %s (%d failures in a row)", which, user, client,
                          failures)
            await HTMLResponse(self._page(door, scope, user, WRONG), status_code=400)(scope, receive, send)
            return
        self.throttle.succeeded(keys)
        AUDIT.info("audit: %s login succeeded for user %r from %s", which, user, client)
        # A browser's form goes on to the app; a script (gradio_client's `auth=`) gets the answer it expects
        answer = _see_other(scope, door.logins.prefix + "/") if "text/html" in (header(scope, "accept") or "") \
            else JSONResponse({"success": True}, headers={"cache-control": "no-store"})
        answer.headers.append("set-cookie", door.logins.set_cookie(token))
        await answer(scope, receive, send)

    def _logout(self, door: LoginDoor, scope: Scope) -> Response:
        """Sign out here (`?all_session=false`) or on every device (the default), at the server."""
        logins = door.logins
        token = logins.token(scope)
        user = logins.user_of(token) if token is not None else None
        if token is not None and user is not None:
            given = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("all_session")
            if given is None or given[-1].lower() in YES:
                ended = logins.store.end_user(user, logins.app)
                AUDIT.info("audit: %r signed out on every device in the %s app (%d sessions)", user, logins.app,
                           ended)
            else:
                logins.store.end(token)
                AUDIT.info("audit: %r signed out on one device in the %s app", user, logins.app)
        answer = _see_other(scope, logins.prefix + "/login")
        answer.headers.append("set-cookie", logins.clear_cookie())
        return answer


def _see_other(scope: Scope, path: str) -> Response:
    return Response(status_code=303, headers={"location": scope.get("root_path", "") + path,
                                              "cache-control": "no-store"})
