"""The logins of one mounted Gradio app, as Gradio 6 keeps them: its `/login` route puts a random token into the
cookies `access-token-<cookie_id>` (and `access-token-unsecure-<cookie_id>` for plain HTTP) and maps it to the
user name in the app's in-memory dict `tokens` (as typed: 'Alice' and 'alice' are one account but two names
there); `/logout` deletes it. m3ui.web.session_guard and a password change read and end them through this class,
so that the guards never import Gradio."""

from __future__ import annotations

import functools
from collections.abc import Mapping

import fastapi
import gradio as gr
from gradio.routes import App
from starlette.requests import HTTPConnection
from starlette.routing import Mount
from starlette.types import Scope

from m3ui.accounts.store import canonical_name


class GradioSessions:
    def __init__(self, app: fastapi.FastAPI, path: str) -> None:
        self._app, self._path = app, path

    @functools.cached_property
    def served(self) -> App:
        """The Gradio app mounted at the path, found at first use (routes may be added before the mount)."""
        return next(route.app for route in self._app.routes  # type: ignore[return-value]  # Gradio's App
                    if isinstance(route, Mount) and route.path == self._path)

    @property
    def login_required(self) -> bool:
        return self.served.auth is not None

    def token(self, scope: Scope) -> str | None:
        return self.token_in(HTTPConnection(scope).cookies)  # http or websocket

    def token_in(self, cookies: Mapping[str, str]) -> str | None:
        cookie_id = self.served.cookie_id
        return cookies.get(f"access-token-{cookie_id}") or cookies.get(f"access-token-unsecure-{cookie_id}")

    def user(self, token: str) -> str | None:
        return self.served.tokens.get(token)

    def logged_in(self, scope: Scope) -> bool:
        """Whether a request carries a login (always true for an app without a login). Gradio checks logins
        only inside its routes, after the guards have run."""
        if not self.login_required:
            return True
        token = self.token(scope)
        return token is not None and token in self.served.tokens

    def end(self, token: str) -> None:
        self.served.tokens.pop(token, None)

    def end_user(self, user: str, keep: str | None = None) -> int:
        """End every session of `user` (on every device, under any spelling of the name) but `keep`; how many."""
        account = canonical_name(user)
        ended = [token for token, name in list(self.served.tokens.items())
                 if canonical_name(name) == account and token != keep]
        for token in ended:
            self.served.tokens.pop(token, None)
        return len(ended)

    def tokens(self) -> set[str]:
        return set(self.served.tokens)


def request_origin(request: gr.Request | None) -> tuple[str, dict[str, str]]:
    """The client address and the cookies of the HTTP request behind a Gradio event (a gr.Request built by hand,
    as tests do, has neither: "unknown" and none)."""
    client = getattr(getattr(request, "client", None), "host", None) or "unknown"
    return client, dict(getattr(request, "cookies", None) or {})
