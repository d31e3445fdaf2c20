"""What the guards know about each mounted Gradio app, without importing Gradio."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from starlette.types import Scope

API_PREFIX = "/gradio_api"


@dataclass(frozen=True)
class GradioMount:
    prefix: str  # "" for the main app, "/admin" for the admin app
    name: str  # as the audit log names it
    fns: Mapping[int, Any]  # the app's event handlers (gradio BlockFunction), by fn_index
    uploads: bool  # whether any component of the app takes an upload
    # Whether the request carries a login the app accepts (always true for an app without a login). Calls
    # of clients that are not logged in pass on unchecked, so they get the app's own 401 and learn nothing.
    logged_in: Callable[[Scope], bool]


def mount_for(path: str, mounts: tuple[GradioMount, ...]) -> tuple[GradioMount, str] | None:
    """The mount serving `path` (longest prefix first) and the path inside it."""
    for mount in sorted(mounts, key=lambda m: len(m.prefix), reverse=True):
        if not mount.prefix or path == mount.prefix or path.startswith(mount.prefix + "/"):
            return mount, path[len(mount.prefix):]
    return None
