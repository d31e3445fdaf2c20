"""Ending a request sent early that nobody took, so that the engine still reports what it used.

Why: closing the connection aborts the request on the engine, but its usage comes only at the end of the stream,
which a closed connection never reads. sglang-kt 0.7.2 instead aborts by request id (`POST /abort_request
{"rid": ...}`, http_server.py): a running request then makes one more decode pass and its stream ends as any other,
a chunk with finish_reason "abort" and then the usage chunk (serving_chat.py). A request still queued, an unknown
rid, a router (sglang-router 0.3.2 has no /abort_request route) or an engine that wants the admin key give no
usage: the caller then charges its bound, as before.
"""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections.abc import Iterator

import orjson

from m3ui.client.event_stream import event_batches
from m3ui.client.http_library import http
from m3ui.client.stream import HttpResponse, disconnect

ABORT_TIMEOUT_S = 2.0  # the abort's own POST: an engine that does not answer that soon is not waited for
USAGE_WAIT_S = 3.0  # the longest read of an aborted stream's rest for its usage chunk
MAX_REST_BYTES = 16 * 1024 * 1024  # the rest of the stream read at most (what it generated before the abort)
RID_PREFIX = "m3ui-early-"  # sglang matches an abort's rid as a prefix: a fixed-length unique id prefixes no other


def new_rid() -> str:
    return RID_PREFIX + uuid.uuid4().hex


def server_root(base_url: str) -> str:
    """The engine's own root from its OpenAI base URL (…/v1), where /abort_request is."""
    root = base_url.rstrip("/")
    return root[: -len("/v1")] if root.endswith("/v1") else root


def abort(base_url: str, api_key: str, rid: str) -> bool:
    """POST /abort_request for `rid`; whether the engine took it (a 200: it says so for an unknown rid too)."""
    try:
        answer = http.post(f"{server_root(base_url)}/abort_request", json={"rid": rid},
                           headers={"Authorization": f"Bearer {api_key}"}, timeout=ABORT_TIMEOUT_S)
    except http.HTTPError:
        return False
    return bool(answer.status_code == 200)


def usage_at_end(response: HttpResponse, wait_s: float = USAGE_WAIT_S) -> tuple[int, int] | None:
    """Read the rest of an aborted stream: its usage chunk's (prompt, completion) tokens, or None when none came
    within `wait_s` or `MAX_REST_BYTES` (the response is shut down then, which also aborts it on the engine)."""
    timer = threading.Timer(wait_s, disconnect, args=(response,))
    timer.daemon = True
    timer.start()
    usage: tuple[int, int] | None = None
    try:
        for batch in event_batches(_capped(response)):
            for data in batch:
                if '"usage"' in data and (found := _usage_of(data)) is not None:
                    usage = found
    except (http.HTTPError, ValueError, RuntimeError, OSError):
        pass  # cut short (shut down at the deadline, or the stream died: 0.7.2 for a request still queued)
    finally:
        timer.cancel()
        with contextlib.suppress(Exception):
            response.close()
    return usage


def _capped(response: HttpResponse) -> Iterator[bytes]:
    total = 0
    for piece in response.iter_bytes():
        total += len(piece)
        if total > MAX_REST_BYTES:
            return
        yield piece


def _usage_of(data: str) -> tuple[int, int] | None:
    try:
        usage = orjson.loads(data).get("usage")
    except (orjson.JSONDecodeError, AttributeError):
        return None
    if not isinstance(usage, dict):
        return None
    prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
    if not isinstance(prompt, int) or not isinstance(completion, int):
        return None
    return prompt, completion
