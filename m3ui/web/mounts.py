"""What the guards know about each mounted Gradio app, without importing Gradio."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from starlette.types import Scope

from m3ui.web.logins import Logins

API_PREFIX = "/gradio_api"


@dataclass(frozen=True)
class GradioMount:
    prefix: str  # "" for the main app, "/admin" for the admin app
    name: str  # as the audit log names it
    fns: Mapping[int, Any]  # the app's event handlers (gradio BlockFunction), by fn_index
    uploads: bool  # whether any component of the app takes an upload
    logins: Logins | None = None  # None: the app has no login

    def user(self, scope: Scope) -> str | None:
        """Who a request is signed in as (None: not signed in, or the app has no login)."""
        return self.logins.user(scope) if self.logins is not None else None

    def logged_in(self, scope: Scope) -> bool:
        """Whether the request carries a login the app accepts (always true for an app without a login). Calls
        of clients that are not logged in pass on unchecked, so they get the app's own 401 and learn nothing."""
        return self.logins is None or self.logins.user(scope) is not None


def mount_for(path: str, mounts: tuple[GradioMount, ...]) -> tuple[GradioMount, str] | None:
    """The mount serving `path` (longest prefix first) and the path inside it."""
    for mount in sorted(mounts, key=lambda m: len(m.prefix), reverse=True):
        if not mount.prefix or path == mount.prefix or path.startswith(mount.prefix + "/"):
            return mount, path[len(mount.prefix):]
    return None
