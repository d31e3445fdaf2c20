"""Checks the calls and uploads that reach either Gradio app (see api_inputs for what a call must hold).

An app with no component that takes a file refuses uploads outright: nothing in it would ever read them,
and anonymous uploads would only fill the disk. Gradio's deep-link route is refused too: each call writes a copy
of the caller's page state into a new folder (one per state, never removed), and m3ui makes no deep links. A call
nested deeper than json_body allows gets a 400, signed in or not (Gradio would parse it and fail with a 500).
"""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Receive, Scope, Send

from m3ui.web.api_inputs import CallRefused, check_call
from m3ui.web.asgi import BodyTooLarge, read_body, refuse, replaying
from m3ui.web.json_body import TooDeep, load_json
from m3ui.web.mounts import API_PREFIX, GradioMount, mount_for

CALL_LIMIT = 16 * 1024 * 1024  # a call's JSON body (a pasted document fits; a flood does not)
UPLOAD_ROUTES = ("upload", "process_recording")
DEEP_LINK = API_PREFIX + "/deep_link"


def api_route(subpath: str) -> tuple[str, str | None] | None:
    """(route, api name) of a Gradio API path inside a mount: ("join", None), ("run", "send") ..."""
    if not subpath.startswith(API_PREFIX + "/"):
        return None
    parts = subpath[len(API_PREFIX) + 1:].strip("/").split("/")
    if parts == ["queue", "join"]:
        return "join", None
    if len(parts) == 1 and parts[0] in UPLOAD_ROUTES:
        return "upload", None
    if len(parts) == 2 and parts[0] in ("run", "api", "call"):
        return parts[0], parts[1]
    if len(parts) == 3 and parts[:2] == ["call", "v2"]:
        return "call/v2", parts[2]
    return None


class ApiGuard:
    def __init__(self, app: ASGIApp, mounts: tuple[GradioMount, ...]) -> None:
        self.app = app
        self.mounts = mounts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        found = mount_for(scope["path"], self.mounts) if scope["type"] == "http" else None
        if found is not None and found[1].rstrip("/") == DEEP_LINK:
            await refuse(scope, receive, send, 404, "deep links are off: each one writes the page's state to disk")
            return
        route = api_route(found[1]) if found and scope["method"] == "POST" else None
        if found is None or route is None:
            await self.app(scope, receive, send)
            return
        mount, (kind, api_name) = found[0], route
        if kind == "upload" and not mount.uploads:
            await refuse(scope, receive, send, 403, f"uploads refused: the {mount.name} app takes no files")
            return
        if kind == "upload":
            await self.app(scope, receive, send)
            return
        try:
            body = await read_body(receive, CALL_LIMIT)
        except BodyTooLarge as exc:
            await refuse(scope, receive, send, 413, f"call refused: {exc}")
            return
        try:
            call = load_json(body)
        except TooDeep as exc:
            await refuse(scope, receive, send, 400, f"call refused: {exc}")
            return
        except (json.JSONDecodeError, UnicodeDecodeError):
            await self.app(scope, replaying(body, receive), send)  # Gradio answers malformed JSON with a 422
            return
        if not mount.logged_in(scope):
            await self.app(scope, replaying(body, receive), send)
            return
        try:
            checked = check_call(mount.fns, kind, api_name, call)
        except CallRefused as exc:
            await refuse(scope, receive, send, exc.status, f"call refused: {exc}")
            return
        if checked != call:
            body = json.dumps(checked).encode()
            scope = {**scope, "headers": [(k, v) for k, v in scope["headers"] if k != b"content-length"]
                     + [(b"content-length", str(len(body)).encode())]}
        await self.app(scope, replaying(body, receive), send)
