"""Turn what the openai SDK (or its HTTP library) raises into StreamError values: one plain sentence each, with
the server's own message where it sent one, never a raw library traceback text."""

from __future__ import annotations

import json

import openai

from m3ui.client.events import StreamError
from m3ui.client.http_library import http
from m3ui.client.safe_text import safe_text

PREVIEW_CHARS = 120  # of a body that is not what we expected: enough to recognise it, short enough to read


def server_message(body: object, fallback: str) -> str:
    """The human message inside an error body: sglang `{"message":..}`, `{"error": "Unauthorized"}`, OpenAI
    `{"error": {"message":..}}` (the SDK may already have unwrapped the "error" key)."""
    if isinstance(body, str) and body.strip():
        return safe_text(body.strip())
    if isinstance(body, dict):
        message = body.get("message")
        if isinstance(message, str) and message:
            return safe_text(message)
        if "error" in body:
            return server_message(body["error"], fallback)
    return fallback


def preview(text: str) -> str:
    """The start of an unexpected body, on one line, control characters escaped (a NUL reads as \\x00);
    "nothing" for an empty one, so a message never ends in an empty "(it sent: )"."""
    flat = " ".join(safe_text(text).split())
    if not flat:
        return "nothing" if not text else f"only blanks ({len(text)} characters)"
    flat = "".join(char if char.isprintable() else ascii(char)[1:-1] for char in flat)
    return flat if len(flat) <= PREVIEW_CHARS else flat[:PREVIEW_CHARS] + "…"


def _status_from_body(body: object) -> int | None:
    code = body.get("code") if isinstance(body, dict) else None
    return code if isinstance(code, int) else None


def _timed_out(exc: BaseException) -> bool:
    return isinstance(exc, openai.APITimeoutError | http.TimeoutException) or isinstance(
        exc.__cause__, http.TimeoutException)


def streamed_error(body: object) -> StreamError:
    """A `data: {"error": ..}` event in the middle of the stream (e.g. the prompt is too long); `body` is the value
    of its "error" key."""
    message = server_message(body, "An error occurred during streaming")
    return StreamError("stream", _status_from_body(body), f"The engine stopped with an error: {message}")


def stream_error_from(exc: Exception, base_url: str, streaming: bool, stall_s: float) -> StreamError:
    """Classify an exception raised while opening (`streaming=False`) or reading a stream."""
    if isinstance(exc, openai.APIStatusError):
        message = server_message(exc.body, fallback=exc.response.reason_phrase or "HTTP error")
        lead = "The engine refused the request" if 400 <= exc.status_code < 500 else "The engine failed"
        return StreamError("http", exc.status_code, f"{lead}: HTTP {exc.status_code}: {message}")
    if _timed_out(exc):
        silence = "sent nothing more for" if streaming else "did not start answering within"
        return StreamError("stall", None, f"The engine {silence} {stall_s:g} s (the stall limit), so the answer "
                           "was given up. If it is working through a long prompt, raise the stall limit; otherwise "
                           "it may be stuck or overloaded")
    if isinstance(exc, UnicodeDecodeError):
        return StreamError("protocol", None, "The engine sent bytes that are not UTF-8 text, which no chat stream "
                           "contains: it is misbehaving or not an OpenAI-compatible engine")
    # openai 3.x wraps errors raised while reading a stream into APIConnectionError; 2.x lets them through.
    if isinstance(exc, openai.APIConnectionError | http.HTTPError):
        if streaming:
            return StreamError("dropped", None, "The engine stopped in the middle of the answer (its connection "
                               "closed)")
        cause = exc.__cause__ or exc
        return StreamError("connection", None, f"Cannot reach the engine at {base_url} ({cause}); is it running?")
    if isinstance(exc, json.JSONDecodeError):
        return StreamError("protocol", None, "The engine sent an event that is not JSON: it is misbehaving or not an "
                           f"OpenAI-compatible engine (it sent: {preview(exc.doc)})")
    raise exc
