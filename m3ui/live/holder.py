"""Who uses a live ticket: the client address a request came from, and the login session it carries.

A ticket is drawn by the page, but a ticket alone proved nothing: with another page's ticket a client could read
that page's answer or push its own frames into it. The first request that opens, claims or asks with a ticket
binds it to its session (the login, or without logins the client address); any other session is refused. The
session is kept as a digest: the login token itself stays in Gradio's table only.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from m3ui.accounts.store import canonical_name


@dataclass(frozen=True)
class LiveHolder:
    client: str  # the address the request came from (what a --trusted-proxy names)
    session: str | None  # the signed-in user and a digest of its login token; None in an app without logins

    @classmethod
    def of(cls, client: str, user: str | None, login_token: str | None) -> LiveHolder:
        if not login_token:
            return cls(client, None)
        digest = hashlib.sha256(login_token.encode()).hexdigest()[:32]
        return cls(client, f"{canonical_name(user or '')}:{digest}")

    @property
    def binding(self) -> str:
        """What a ticket is bound to: the session, or without logins the client address."""
        return self.session if self.session is not None else f"client:{self.client}"
