"""Turn what the openai SDK (or its HTTP library) raises into StreamError values with the server's own message."""

from __future__ import annotations

import json

import openai

from m3ui.client.events import StreamError
from m3ui.client.http_library import http


def server_message(body: object, fallback: str) -> str:
    """The human message inside an error body: sglang `{"message":..}`, `{"error": "Unauthorized"}`, OpenAI
    `{"error": {"message":..}}` (the SDK may already have unwrapped the "error" key)."""
    if isinstance(body, str) and body.strip():
        return body.strip()
    if isinstance(body, dict):
        message = body.get("message")
        if isinstance(message, str) and message:
            return message
        if "error" in body:
            return server_message(body["error"], fallback)
    return fallback


def _status_from_body(body: object) -> int | None:
    code = body.get("code") if isinstance(body, dict) else None
    return code if isinstance(code, int) else None


def stream_error_from(exc: Exception, base_url: str, streaming: bool) -> StreamError:
    """Classify an exception raised while opening (`streaming=False`) or reading a stream."""
    if isinstance(exc, openai.APIStatusError):
        message = server_message(exc.body, fallback=exc.response.reason_phrase or "HTTP error")
        return StreamError("http", exc.status_code, f"HTTP {exc.status_code}: {message}")
    if isinstance(exc, openai.APITimeoutError | http.TimeoutException):
        return StreamError("connection", None, f"timed out talking to {base_url}; is the engine busy or stuck?")
    # openai 3.x wraps errors raised while reading a stream into APIConnectionError; 2.x lets them through.
    if isinstance(exc, openai.APIConnectionError | http.HTTPError):
        cause = exc.__cause__ or exc
        if streaming:
            return StreamError("stream", None, f"the stream broke off: {cause}")
        return StreamError("connection", None, f"cannot reach {base_url} ({cause}); is the engine running?")
    if isinstance(exc, openai.APIError):
        # An `data: {"error": ..}` event in the middle of the stream (e.g. the prompt is too long).
        return StreamError("stream", _status_from_body(exc.body), server_message(exc.body, exc.message))
    if isinstance(exc, json.JSONDecodeError):
        return StreamError("stream", None, f"the server sent an event that is not JSON: {exc}")
    raise exc
