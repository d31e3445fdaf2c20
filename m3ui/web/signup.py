"""The sign-up page at /signup: anyone who reaches the app may create an account with role user, only while an
admin has turned sign-up on (Users tab or `python -m m3ui.users signup on`); off by default.

A plain HTML form served before the Gradio apps (which would take every path), behind the same Host and Origin
guards (a page on another site cannot post it). Each client address may try SIGNUPS_PER_HOUR names an hour
(created, or refused as taken), so a script can neither fill the database nor list the names in it; refused input
costs no password hashing. Every refusal says the same thing: which rule failed, or that the name is taken, is
written to the audit log only.
"""

from __future__ import annotations

import asyncio
import html
import logging
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from urllib.parse import parse_qs

from starlette.responses import HTMLResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from m3ui.accounts import AccountError, AccountStore
from m3ui.accounts.passwords import password_problem
from m3ui.accounts.store import check_name
from m3ui.web.asgi import BodyTooLarge, client_address, header, read_body

AUDIT = logging.getLogger("m3ui.audit")
PATHS = ("/signup", "/signup/")
FORM_LIMIT = 16 * 1024
SIGNUPS_PER_HOUR = 3
MAX_CLIENTS = 10_000  # addresses remembered; the oldest is forgotten first
REFUSED = ("Not created: choose another name, and check the rules (a name of 1-64 of a-z 0-9 . _ @ -, a password "
           "of 8+ characters typed the same twice).")

PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>m3ui: create an account</title>
<meta name="viewport" content="width=device-width, initial-scale=1"><style>body{{font-family:system-ui,sans-serif;
max-width:26rem;margin:3rem auto;padding:0 1rem}}label{{display:block;margin:.8rem 0 .2rem}}input{{width:100%;
padding:.4rem;box-sizing:border-box}}button{{margin-top:1rem;padding:.5rem 1rem}}.m3-note{{padding:.5rem;
border-radius:4px;background:#eef}}.m3-error{{background:#fdd}}</style></head><body><h1>Create an account</h1>
{note}<form method="post" action="signup"><label for="username">Name (a-z 0-9 . _ @ -)</label>
<input id="username" name="username" autocomplete="username" required maxlength="64" value="{name}">
<label for="password">Password (8+ characters)</label><input id="password" name="password" type="password"
autocomplete="new-password" required maxlength="1024"><label for="again">Password again</label>
<input id="again" name="again" type="password" autocomplete="new-password" required maxlength="1024">
<button type="submit">Create the account</button></form><p><a href="./">Back to the sign-in page</a></p>
</body></html>"""


def page(note: str = "", error: bool = False, name: str = "") -> str:
    shown = f'<p class="m3-note{" m3-error" if error else ""}" role="status">{html.escape(note)}</p>' if note else ""
    return PAGE.format(note=shown, name=html.escape(name))


class SignupRoute:
    def __init__(self, app: ASGIApp, accounts: AccountStore, clock: Callable[[], float] = time.monotonic) -> None:
        self.app, self.accounts, self.clock = app, accounts, clock
        self._recent: OrderedDict[str, deque[float]] = OrderedDict()  # client -> times of its sign-ups

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] not in PATHS:
            await self.app(scope, receive, send)
            return
        if not self.accounts.signup_enabled:
            await HTMLResponse(page("Sign-up is off on this server: ask its admin for an account.", True),
                               status_code=403)(scope, receive, send)
            return
        if scope["method"] != "POST":
            await HTMLResponse(page())(scope, receive, send)
            return
        status, body = await self._sign_up(scope, receive)
        await HTMLResponse(body, status_code=status)(scope, receive, send)

    async def _sign_up(self, scope: Scope, receive: Receive) -> tuple[int, str]:
        client = client_address(scope)
        try:
            raw = await read_body(receive, FORM_LIMIT)
        except BodyTooLarge:
            return 413, page("That form is too large.", True)
        if not (header(scope, "content-type") or "").startswith("application/x-www-form-urlencoded"):
            return 400, page("Send the form from this page.", True)
        form = {k: v[0] for k, v in parse_qs(raw.decode("utf-8", "replace")).items()}
        name, password = form.get("username", "").strip(), form.get("password", "")
        try:
            check_name(name)
            if problem := password_problem(password):
                raise AccountError(problem)
            if password != form.get("again", ""):
                raise AccountError("the two passwords differ")
        except AccountError as exc:
            return self._refused(name, client, str(exc))
        if not self._allowed(client):
            AUDIT.warning("audit: sign-up refused for %r from %s: too many sign-ups from this address", name, client)
            return 429, page("Too many sign-ups from your address in the last hour: try later.", True, name)
        self._recent.setdefault(client, deque()).append(self.clock())  # a taken name counts too
        try:  # scrypt takes a tenth of a second of CPU: not on the event loop
            user = await asyncio.to_thread(self.accounts.add, name, password, "user")
        except AccountError as exc:
            return self._refused(name, client, str(exc))
        AUDIT.info("audit: account %r created by sign-up from %s", user.name, client)
        return 200, page(f"Account {user.name} created: sign in on the sign-in page.")

    @staticmethod
    def _refused(name: str, client: str, reason: str) -> tuple[int, str]:
        AUDIT.info("audit: sign-up refused for %r from %s: %s", name[:70], client, reason)
        return 400, page(REFUSED, True, name)

    def _allowed(self, client: str) -> bool:
        now = self.clock()
        times = self._recent.get(client, deque())
        while times and now - times[0] > 3600:
            times.popleft()
        self._recent.pop(client, None)
        if times:
            self._recent[client] = times
        while len(self._recent) > MAX_CLIENTS:
            self._recent.popitem(last=False)
        return len(times) < SIGNUPS_PER_HOUR
