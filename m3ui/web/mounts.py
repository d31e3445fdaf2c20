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
    def user(self, token: str) -> str | None: ...
    def end(self, token: str) -> None: ...
    def end_user(self, user: str) -> int: ...
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
