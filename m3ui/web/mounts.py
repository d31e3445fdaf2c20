"""What the guards know about each mounted Gradio app, without importing Gradio."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from starlette.types import Scope

API_PREFIX = "/gradio_api"


class SessionTable(Protocol):
    """A mounted Gradio app's logins: its token cookie and the in-memory table of tokens
    (m3ui/ui/gradio_contacts/logins.py)."""

    def token(self, scope: Scope) -> str | None: ...
    def token_in(self, cookies: Mapping[str, str]) -> str | None: ...
    def user(self, token: str) -> str | None: ...
    def end(self, token: str) -> None: ...
    def end_user(self, user: str, keep: str | None = None) -> int: ...
    def tokens(self) -> set[str]: ...


@dataclass(frozen=True)
class GradioMount:
    prefix: str  # "" for the main app, "/admin" for the admin app
    name: str  # as the audit log names it
    fns: Mapping[int, Any]  # the app's event handlers (gradio BlockFunction), by fn_index
    uploads: bool  # whether any component of the app takes an upload
    # Whether the request carries a login the app accepts (always true for an app without a login). Calls
    # of clients that are not logged in pass on unchecked, so they get the app's own 401 and learn nothing.
    logged_in: Callable[[Scope], bool]
    sessions: SessionTable | None = None  # None: the app has no login

    def user(self, scope: Scope) -> str | None:
        """Who a request is signed in as (None: not signed in, or the app has no login)."""
        token = self.sessions.token(scope) if self.sessions is not None else None
        return self.sessions.user(token) if self.sessions is not None and token is not None else None


def mount_for(path: str, mounts: tuple[GradioMount, ...]) -> tuple[GradioMount, str] | None:
    """The mount serving `path` (longest prefix first) and the path inside it."""
    for mount in sorted(mounts, key=lambda m: len(m.prefix), reverse=True):
        if not mount.prefix or path == mount.prefix or path.startswith(mount.prefix + "/"):
            return mount, path[len(mount.prefix):]
    return None


def end_sessions(mounts: tuple[GradioMount, ...], user: str, cookies: Mapping[str, str],
                 renew: Callable[[str, str], None]) -> int:
    """End `user`'s sessions in every app, but the ones `cookies` carry (the device that asked, `renew`ed: stamped
    anew with the password it just set); how many were ended."""
    ended = 0
    for table in (m.sessions for m in mounts if m.sessions is not None):
        keep = table.token_in(cookies)
        ended += table.end_user(user, keep=keep)
        if keep is not None and table.user(keep) is not None:
            renew(keep, user)
    return ended
